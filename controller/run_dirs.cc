// Run directories: see run_dirs.h.
#include "controller/run_dirs.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <filesystem>

#include "core/bounded_file.h"
#include "core/proc.h"
#include "core/run_id.h"
#include "core/syscall.h"
#include "core/temp_dir.h"

namespace sealrun::run {

namespace {

Status ensure_dir(const std::string& path, mode_t mode) {
  if (::mkdir(path.c_str(), mode) == 0 || errno == EEXIST) {
    auto st = SEALRUN_TRY(lstat_at(AT_FDCWD, path));
    if (!S_ISDIR(st.st_mode))
      return Error::make(fmt::format("{}: exists and is not a directory", path));
    return ok_status();
  }
  return Error::from_errno(fmt::format("mkdir {}", path));
}

Status make_job_dir(const std::string& path, const JobUser& user) {
  if (!user.drop) return make_dir_at(AT_FDCWD, path, 0700);
  return prepare_owned_dir(path, user);
}

bool exists_no_follow(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

// "<id>.<pid>.<starttime>", parsed from the right: ids may contain dots.
struct CreatorName {
  std::string id;
  pid_t pid = 0;
  std::string start;
};
std::optional<CreatorName> parse_creator_name(std::string_view name) {
  size_t last = name.rfind('.');
  if (last == std::string_view::npos || last == 0) return std::nullopt;
  size_t mid = name.rfind('.', last - 1);
  if (mid == std::string_view::npos || mid == 0) return std::nullopt;
  CreatorName c;
  c.id = std::string(name.substr(0, mid));
  std::string_view pid = name.substr(mid + 1, last - mid - 1);
  c.start = std::string(name.substr(last + 1));
  auto [p, ec] = std::from_chars(pid.data(), pid.data() + pid.size(), c.pid);
  if (ec != std::errc() || p != pid.data() + pid.size() || c.pid <= 0 || c.start.empty() ||
      !is_valid_run_id(c.id))
    return std::nullopt;
  return c;
}

}  // namespace

Status check_id_unused(const RunLayout& layout, const std::string& id) {
  for (const std::string& p : {layout.results_root, layout.owned_root})
    if (exists_no_follow(p))
      return Error::make(fmt::format(
          "run id {} was used before ({} exists); choose a new --id — earlier runs are never "
          "overwritten{}",
          id, p, p == layout.owned_root ? " (left by a killed run? run `sealrun sweep`)" : ""));
  return ok_status();
}

Status ensure_state_dir(const RunLayout& layout) { return ensure_dir(layout.state_dir, 0755); }

Status claim_run_dirs(const RunLayout& layout, const std::string& id, const JobUser& job_user) {
  SEALRUN_TRY(ensure_dir(layout.state_dir, 0755));
  // Search-only for others: rootless podman, running as the job user, reaches its storage under
  // owned/<id>/ by path. Listing owned/ stays private.
  SEALRUN_TRY(ensure_dir(layout.state_dir + "/owned", 0711));
  SEALRUN_TRY(ensure_dir(layout.state_dir + "/results", 0755));
  // results/<id> first: it is the record of a run, and its existence alone refuses the id.
  if (::mkdir(layout.results_root.c_str(), 0755) != 0) {
    if (errno == EEXIST) return check_id_unused(layout, id);
    return Error::from_errno(fmt::format("mkdir {}", layout.results_root));
  }
  if (::mkdir(layout.owned_root.c_str(), 0700) != 0) {
    Error e = errno == EEXIST ? check_id_unused(layout, id).error()
                              : Error::from_errno(fmt::format("mkdir {}", layout.owned_root));
    ::rmdir(layout.results_root.c_str());  // ours, just made, empty
    return e;
  }
  auto marker = open_at(AT_FDCWD, layout.owned_root + "/" + kOwnedMarker,
                        O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
  if (!marker) return std::move(marker).error();
  SEALRUN_TRY(write_all(marker->get(), id + "\n", kOwnedMarker));
  // The owned root stays 0700, but belongs to the job user when we are root, so that a rootless
  // mechanism that works by path (podman's storage) can reach what is kept for it inside. The
  // marker and logs/ remain root's own.
  if (job_user.drop && ::chown(layout.owned_root.c_str(), job_user.uid, job_user.gid) != 0)
    return Error::from_errno("chown " + layout.owned_root);
  return ok_status();
}

Status release_run_claim(const RunLayout& layout, const std::string& id) {
  if (exists_no_follow(layout.owned_root)) SEALRUN_TRY(remove_owned_root(layout, id));
  // Only the empty directories the claim and prepare_job_dirs() made: anything else keeps the id.
  for (const std::string& d : {layout.output_dir, layout.results_root + "/logs"})
    if (::rmdir(d.c_str()) != 0 && errno != ENOENT)
      return Error::from_errno(fmt::format("rmdir {}", d));
  if (::rmdir(layout.results_root.c_str()) != 0 && errno != ENOENT)
    return Error::from_errno(fmt::format("rmdir {}", layout.results_root));
  return ok_status();
}

Result<std::string> refusal_receipt_path(const std::string& state_dir, const std::string& id) {
  SEALRUN_TRY(ensure_dir(state_dir, 0755));
  SEALRUN_TRY(ensure_dir(state_dir + "/refusals", 0755));
  std::string dir = fmt::format("{}/refusals/{}", state_dir, id);
  SEALRUN_TRY(ensure_dir(dir, 0755));
  // UTC time to the millisecond plus our pid: unique, and sorted by time when listed.
  std::string stamp = utc_timestamp_now();
  for (char& c : stamp)
    if (c == ':') c = '-';
  for (int n = 0; n < 1000; ++n) {
    std::string path = fmt::format("{}/{}-{}{}.json", dir, stamp, ::getpid(),
                                   n == 0 ? "" : fmt::format("-{}", n));
    if (!exists_no_follow(path)) return path;
  }
  return Error::make(fmt::format("{}: no free name for the refusal receipt", dir));
}

Status prepare_job_dirs(const RunLayout& layout, const JobUser& job_user) {
  SEALRUN_TRY(make_job_dir(layout.scratch_dir, job_user));
  SEALRUN_TRY(make_job_dir(layout.output_dir, job_user));
  return make_dir_at(AT_FDCWD, layout.logs_dir, 0700);
}

Status remove_owned_root(const RunLayout& layout, const std::string& id) {
  auto marker = read_bounded_file(AT_FDCWD, layout.owned_root + "/" + kOwnedMarker, 256);
  if (!marker)
    return std::move(marker).error().context("refusing to remove an unmarked owned root");
  if (*marker != id + "\n")
    return Error::make(fmt::format("{}: marker names another run; not removed", layout.owned_root));
  std::error_code ec;
  // Job-written trees may contain read-only directories; root removes them regardless, and an
  // unprivileged controller owns everything it made. remove_all never follows symlinks.
  std::filesystem::remove_all(layout.owned_root, ec);
  if (ec) return Error::with_errno(ec.value(), fmt::format("remove {}", layout.owned_root));
  return ok_status();
}

Status remove_recorded_owned_root(const std::string& state_dir, const std::string& owned_root,
                                  const std::string& id) {
  RunLayout layout =
      layout_for(std::filesystem::absolute(state_dir).lexically_normal().string(), id);
  if (owned_root != layout.owned_root)
    return Error::make(
        fmt::format("recorded owned root {} is not this state directory's {}; "
                    "not removed",
                    owned_root, layout.owned_root));
  return remove_owned_root(layout, id);
}

Result<std::string> make_export_dir(const std::string& state_dir, const std::string& id) {
  SEALRUN_TRY(ensure_dir(state_dir, 0755));
  // Search-only for others, like owned/: podman reaches a read-only source by path.
  SEALRUN_TRY(ensure_dir(state_dir + "/exports", 0711));
  std::string start = SEALRUN_TRY(own_starttime());
  std::string dir = fmt::format("{}/exports/{}.{}.{}", state_dir, id, ::getpid(), start);
  SEALRUN_TRY(make_dir_at(AT_FDCWD, dir, 0711));
  return dir;
}

Status remove_export_dir(const std::string& path) {
  if (path.empty() || !exists_no_follow(path)) return ok_status();
  if (!remove_tree_forcibly(path)) return Error::make(fmt::format("{}: not fully removed", path));
  return ok_status();
}

std::vector<SweepStep> sweep_exports(const std::string& state_dir) {
  std::vector<SweepStep> steps;
  std::string dir = state_dir + "/exports";
  auto fd = open_at(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  if (!fd) return steps;
  for (const std::string& name : list_dir_names(fd->get())) {
    auto creator = parse_creator_name(name);
    if (!creator) continue;  // not a name sealrun makes: not provably ours
    if (process_is_alive(creator->pid, creator->start)) continue;
    std::string path = dir + "/" + name;
    Status st = remove_export_dir(path);
    steps.push_back({"source export " + path,
                     st ? "removed (its run's controller is gone)"
                        : "not removed: " + st.error().message(),
                     !st.ok()});
  }
  return steps;
}

}  // namespace sealrun::run
