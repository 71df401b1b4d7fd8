// SPDX-License-Identifier: Apache-2.0
// Run directories: see run_dirs.h.
#include "controller/run/run_dirs.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <optional>

#include "core/beneath.h"
#include "core/bounded_file.h"
#include "core/proc.h"
#include "core/run_id.h"
#include "core/syscall.h"

namespace sealrun::run {

namespace {

// Makes `path` (new, below the state directory) and, when we are root, gives it to the job user,
// through a descriptor of the directory just made (a rename in between cannot redirect the chown).
Status make_job_dir(const StateDir& state, const std::string& path, const JobUser& user) {
  SEALRUN_TRY(state.make_dir(path, 0700));
  auto fd = SEALRUN_TRY(state.open(path, O_RDONLY | O_DIRECTORY));
  if (user.drop && ::fchown(fd.get(), user.uid, user.gid) != 0)
    return Error::from_errno(fmt::format("chown {} to job user {}", path, user.name));
  if (::fchmod(fd.get(), 0700) != 0) return Error::from_errno(fmt::format("chmod 0700 {}", path));
  return ok_status();
}

// "<id>.<pid>.<starttime>" (exports) or "<pid>.<starttime>" (temporaries, `with_id` false),
// parsed from the right: ids may contain dots.
struct CreatorName {
  std::string id;
  pid_t pid = 0;
  std::string start;
};
std::optional<CreatorName> parse_creator_name(std::string_view name, bool with_id) {
  size_t last = name.rfind('.');
  if (last == std::string_view::npos || last == 0) return std::nullopt;
  size_t mid = with_id ? name.rfind('.', last - 1) : std::string_view::npos;
  if (with_id && (mid == std::string_view::npos || mid == 0)) return std::nullopt;
  size_t pid_at = with_id ? mid + 1 : 0;
  CreatorName c;
  if (with_id) c.id = std::string(name.substr(0, mid));
  std::string_view pid = name.substr(pid_at, last - pid_at);
  c.start = std::string(name.substr(last + 1));
  auto [p, ec] = std::from_chars(pid.data(), pid.data() + pid.size(), c.pid);
  bool start_digits =
      !c.start.empty() && c.start.find_first_not_of("0123456789") == std::string::npos;
  if (ec != std::errc() || p != pid.data() + pid.size() || c.pid <= 0 || !start_digits ||
      (with_id && !is_valid_run_id(c.id)))
    return std::nullopt;
  return c;
}

// Directory entries of `sub` (a fixed subdirectory) named by a creator that is no longer alive.
std::vector<std::pair<std::string, CreatorName>> dead_creators(const StateDir& state,
                                                               const std::string& sub,
                                                               bool with_id) {
  std::vector<std::pair<std::string, CreatorName>> out;
  auto fd = state.open(sub, O_RDONLY | O_DIRECTORY);
  if (!fd) return out;
  for (const std::string& name : list_dir_names(fd->get())) {
    auto creator = parse_creator_name(name, with_id);
    if (!creator) continue;  // not a name sealrun makes: not provably ours
    if (process_is_alive(creator->pid, creator->start)) continue;
    out.emplace_back(sub + "/" + name, *creator);
  }
  return out;
}

}  // namespace

Status check_id_unused(const StateDir& state, const RunLayout& layout, const std::string& id) {
  for (const std::string& p : {layout.results_root, layout.owned_root})
    if (state.exists(p))
      return Error::make(fmt::format(
          "run id {} was used before ({} exists); choose a new --id — earlier runs are never "
          "overwritten{}",
          id, p, p == layout.owned_root ? " (left by a killed run? run `sealrun sweep`)" : ""));
  return ok_status();
}

Status claim_run_dirs(const StateDir& state, const RunLayout& layout, const std::string& id) {
  // Search-only for others: rootless podman, running as the job user, reaches its storage under
  // owned/<id>/ by path. Listing owned/ stays private.
  SEALRUN_TRY(state.ensure_subdir("owned", 0711));
  SEALRUN_TRY(state.ensure_subdir("results", 0755));
  // results/<id> first: it is the record of a run, and its existence alone refuses the id.
  if (Status made = state.make_dir(layout.results_root, 0755); !made)
    return made.error().err() == EEXIST ? check_id_unused(state, layout, id) : made;
  if (Status made = state.make_dir(layout.owned_root, 0711); !made) {
    Error e = made.error().err() == EEXIST ? check_id_unused(state, layout, id).error()
                                           : std::move(made).error();
    (void)state.remove(layout.results_root, true);  // ours, just made, empty
    return e;
  }
  // The owned root is root's and stays so: 0711 lets the job user pass through to what is its
  // own inside (scratch/, podman's storage), but it cannot rename or replace anything here, so the
  // marker and logs/ are where root put them.
  auto marker = SEALRUN_TRY(
      state.open(layout.owned_root + "/" + kOwnedMarker, O_WRONLY | O_CREAT | O_EXCL, 0600));
  return write_all(marker.get(), id + "\n", kOwnedMarker);
}

Status release_run_claim(const StateDir& state, const RunLayout& layout, const std::string& id) {
  if (state.exists(layout.owned_root)) SEALRUN_TRY(remove_owned_root(state, layout, id));
  // Only the empty directories the claim and prepare_job_dirs() made: anything else keeps the id.
  for (const std::string& d : {layout.output_dir, layout.results_root + "/logs"})
    SEALRUN_TRY(state.remove(d, true));
  return state.remove(layout.results_root, true);
}

Result<std::string> refusal_receipt_path(const StateDir& state, const std::string& id) {
  SEALRUN_TRY(state.ensure_subdir("refusals", 0755));
  std::string dir = fmt::format("{}/refusals/{}", state.path(), id);
  SEALRUN_TRY(state.make_dir(dir, 0755, true));
  // UTC time to the millisecond plus our pid: unique, and sorted by time when listed.
  std::string stamp = utc_timestamp_now();
  for (char& c : stamp)
    if (c == ':') c = '-';
  for (int n = 0; n < 1000; ++n) {
    std::string path =
        fmt::format("{}/{}-{}{}.json", dir, stamp, ::getpid(), n == 0 ? "" : fmt::format("-{}", n));
    if (!state.exists(path)) return path;
  }
  return Error::make(fmt::format("{}: no free name for the refusal receipt", dir));
}

Status prepare_job_dirs(const StateDir& state, const RunLayout& layout, const JobUser& job_user) {
  SEALRUN_TRY(make_job_dir(state, layout.scratch_dir, job_user));
  SEALRUN_TRY(make_job_dir(state, layout.output_dir, job_user));
  return state.make_dir(layout.logs_dir, 0700);
}

Status remove_owned_root(const StateDir& state, const RunLayout& layout, const std::string& id) {
  auto fd = SEALRUN_TRY(state.open(layout.owned_root, O_RDONLY | O_DIRECTORY));
  auto marker = read_bounded_file(fd.get(), kOwnedMarker, 256);
  if (!marker)
    return std::move(marker).error().context("refusing to remove an unmarked owned root");
  if (*marker != id + "\n")
    return Error::make(fmt::format("{}: marker names another run; not removed", layout.owned_root));
  // Job-written trees may contain read-only directories; root removes them regardless, and an
  // unprivileged controller owns everything it made. Nothing below is followed if it is a link.
  return state.remove_tree(layout.owned_root);
}

Status remove_recorded_owned_root(const StateDir& state, const std::string& owned_root,
                                  const std::string& id) {
  RunLayout layout = layout_for(state.path(), id);
  if (owned_root != layout.owned_root)
    return Error::make(
        fmt::format("recorded owned root {} is not this state directory's {}; "
                    "not removed",
                    owned_root, layout.owned_root));
  auto fd = SEALRUN_TRY(state.open(layout.owned_root, O_RDONLY | O_DIRECTORY));
  // The controller was killed between claiming the directory and finishing its marker: the
  // record (written first) names it, and it holds nothing that could be anyone else's.
  std::vector<std::string> names = list_dir_names(fd.get(), 4);
  bool only_marker = names.empty() || (names.size() == 1 && names[0] == kOwnedMarker);
  if (only_marker) {
    auto partial = read_bounded_file(fd.get(), kOwnedMarker, 256);
    std::string want = id + "\n";
    if (names.empty() || (partial && want.compare(0, partial->size(), *partial) == 0))
      return state.remove_tree(layout.owned_root);
  }
  return remove_owned_root(state, layout, id);
}

SweepStep release_empty_results(const StateDir& state, const std::string& id) {
  RunLayout layout = layout_for(state.path(), id);
  SweepStep s{"results " + layout.results_root, "", false};
  if (!state.exists(layout.results_root)) {
    s.outcome = "none";
    return s;
  }
  Status released = ok_status();
  for (const std::string& d : {layout.output_dir, layout.results_root + "/logs"})
    if (released) released = state.remove(d, true);
  if (released) released = state.remove(layout.results_root, true);
  s.outcome = released ? "removed (the killed run left nothing in it; its id is free again)"
                       : "kept: the killed run left something in it";
  return s;
}

Result<std::string> make_export_dir(const StateDir& state, const std::string& id) {
  // Search-only for others, like owned/: podman reaches a read-only source by path.
  SEALRUN_TRY(state.ensure_subdir("exports", 0711));
  std::string start = SEALRUN_TRY(own_starttime());
  std::string dir = fmt::format("{}/exports/{}.{}.{}", state.path(), id, ::getpid(), start);
  SEALRUN_TRY(state.make_dir(dir, 0711));
  return dir;
}

Status remove_export_dir(const StateDir& state, const std::string& path) {
  if (path.empty()) return ok_status();
  return state.remove_tree(path);
}

std::vector<SweepStep> sweep_exports(const StateDir& state) {
  std::vector<SweepStep> steps;
  for (const auto& [rel, creator] : dead_creators(state, "exports", true)) {
    Status st = state.remove_tree(rel);
    steps.push_back(
        {"source export " + state.path() + "/" + rel,
         st ? "removed (its run's controller is gone)" : "not removed: " + st.error().message(),
         !st.ok()});
  }
  return steps;
}

Status make_temp_dir(const StateDir& state, const std::string& path) {
  SEALRUN_TRY(state.ensure_subdir("tmp", 0711));
  // Search-only for others: the podman probe's storage inside is reached by the job user.
  return state.make_dir(path, 0711);
}

Status remove_temp_dir(const StateDir& state, const std::string& path) {
  if (path.empty()) return ok_status();
  return state.remove_tree(path);
}

std::vector<StrayDir> dead_temp_dirs(const StateDir& state) {
  std::vector<StrayDir> out;
  for (const auto& [rel, creator] : dead_creators(state, "tmp", false))
    out.push_back({state.path() + "/" + rel, creator.start});
  return out;
}

}  // namespace sealrun::run
