// Run directories: see run_dirs.h.
#include "controller/run_dirs.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "containment/job_user.h"
#include "core/bounded_file.h"
#include "core/syscall.h"

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

Status make_job_dir(const std::string& path) {
  if (::geteuid() != 0) return make_dir_at(AT_FDCWD, path, 0700);
  auto user = SEALRUN_TRY(lookup_job_user(job_user_name()));
  return prepare_owned_dir(path, user);
}

}  // namespace

Status claim_run_dirs(const RunLayout& layout, const std::string& id) {
  SEALRUN_TRY(ensure_dir(layout.state_dir, 0755));
  // Search-only for others: rootless podman, running as the job user, reaches its storage under
  // owned/<id>/ by path. Listing owned/ stays private.
  SEALRUN_TRY(ensure_dir(layout.state_dir + "/owned", 0711));
  SEALRUN_TRY(ensure_dir(layout.state_dir + "/results", 0755));
  // results/<id> first: it is the record of a run, and its existence alone refuses the id.
  if (::mkdir(layout.results_root.c_str(), 0755) != 0) {
    if (errno == EEXIST)
      return Error::make(fmt::format(
          "run id {} was used before ({} exists); choose a new --id — earlier runs are never "
          "overwritten",
          id, layout.results_root));
    return Error::from_errno(fmt::format("mkdir {}", layout.results_root));
  }
  if (::mkdir(layout.owned_root.c_str(), 0700) != 0) {
    Error e = errno == EEXIST
                  ? Error::make(fmt::format("run id {}: {} exists (left by a killed run? run "
                                            "`sealrun sweep`)",
                                            id, layout.owned_root))
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
  if (::geteuid() == 0) {
    auto user = SEALRUN_TRY(lookup_job_user(job_user_name()));
    if (::chown(layout.owned_root.c_str(), user.uid, user.gid) != 0)
      return Error::from_errno("chown " + layout.owned_root);
  }
  return ok_status();
}

Status prepare_job_dirs(const RunLayout& layout) {
  SEALRUN_TRY(make_job_dir(layout.scratch_dir));
  SEALRUN_TRY(make_job_dir(layout.output_dir));
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

}  // namespace sealrun::run
