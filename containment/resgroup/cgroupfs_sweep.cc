// SPDX-License-Identifier: Apache-2.0
// Sweeping cgroupfs groups that a killed controller left (cgroupfs_sweep.h): ownership is proven
// from the group's name (prefix, run id, creator pid + starttime) before anything is signalled.
#include "containment/resgroup/cgroupfs_sweep.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>

#include <filesystem>
#include <memory>

#include "containment/resgroup/cgroup_v1.h"
#include "containment/resgroup/cgroup_v2.h"
#include "core/syscall.h"

namespace sealrun::resgroup {
namespace {

std::string basename_of(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Stops and removes an attached group; one step per locator.
void stop_and_remove(ResourceGroup& g, const std::string& label, int64_t grace_ms,
                     std::vector<SweepStep>& steps) {
  auto locs = g.locators();
  if (locs.empty()) return;
  std::string where =
      locs.size() == 1 ? locs[0] : fmt::format("{} (+{} more)", locs[0], locs.size() - 1);
  auto s = g.stop(grace_ms);
  if (!s) {
    steps.push_back({label + " " + where, "stop failed: " + s.error().message(), true});
    return;
  }
  if (!s->confirmed) {
    steps.push_back(
        {label + " " + where,
         fmt::format("stop NOT confirmed after signalling {} processes", s->processes_signalled),
         true});
    return;
  }
  auto r = g.remove();
  std::string stopped = s->processes_signalled == 0
                            ? "empty"
                            : fmt::format("stopped {} processes", s->processes_signalled);
  for (const auto& l : locs)
    steps.push_back(
        {label + " " + l,
         r ? stopped + ", removed" : stopped + ", remove failed: " + r.error().message(), !r.ok()});
}

Result<std::unique_ptr<ResourceGroup>> attach(const std::string& backend,
                                              const std::vector<std::string>& locators,
                                              const CgroupfsSeams& seams,
                                              std::vector<std::string>* gone) {
  if (backend == backend_name(Backend::kCgroupV1))
    return attach_cgroup_v1_group(locators, seams, gone);
  if (backend == backend_name(Backend::kCgroupV2))
    return attach_cgroup_v2_group(locators, seams, gone);
  return Error::make(fmt::format("back end '{}' is not a cgroupfs back end", backend));
}

}  // namespace

std::vector<SweepStep> sweep_recorded_groups(const std::string& backend,
                                             const std::vector<std::string>& locators,
                                             const std::string& run_id, pid_t controller_pid,
                                             const std::string& controller_start, int64_t grace_ms,
                                             const CgroupfsSeams& seams) {
  std::vector<SweepStep> steps;
  if (locators.empty()) return steps;
  // The name is re-derived from the record: a locator naming any other group is refused, so a
  // tampered record cannot steer sweep to someone else's group.
  std::string want = group_dir_name(run_id, controller_pid, controller_start);
  for (const auto& l : locators) {
    if (basename_of(l) != want) {
      steps.push_back({backend + " group " + l,
                       fmt::format("refused: not the group this record's run makes ({})", want),
                       true});
      return steps;
    }
  }
  std::vector<std::string> gone;
  auto g = attach(backend, locators, seams, &gone);
  if (!g) {
    steps.push_back(
        {backend + " groups of run " + run_id, "refused: " + g.error().message(), true});
    return steps;
  }
  for (const auto& l : gone) steps.push_back({backend + " group " + l, "already gone", false});
  stop_and_remove(**g, backend + " group", grace_ms, steps);
  return steps;
}

namespace {

std::vector<std::string> list_children(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (!e.is_directory(ec) || e.is_symlink(ec)) continue;
    std::string n = e.path().filename().string();
    if (n.rfind(kGroupPrefix, 0) == 0) out.push_back(e.path().string());
  }
  return out;
}

void sweep_dir(const std::string& backend, const std::string& own_dir, int64_t grace_ms,
               const CgroupfsSeams& seams, std::vector<SweepStep>& steps) {
  for (const auto& path : list_children(own_dir)) {
    auto name = parse_group_dir_name(basename_of(path));
    if (!name) continue;  // not a name sealrun makes: not provably ours
    if (process_is_alive(name->creator_pid, name->creator_start, seams.proc_root)) continue;
    std::vector<std::string> gone;
    auto g = attach(backend, {path}, seams, &gone);
    if (!g) {
      steps.push_back({backend + " stray group " + path, "refused: " + g.error().message(), true});
      continue;
    }
    stop_and_remove(**g, backend + " stray group", grace_ms, steps);
  }
}

}  // namespace

std::vector<SweepStep> sweep_stray_groups(int64_t grace_ms, const CgroupfsSeams& seams) {
  std::vector<SweepStep> steps;
  auto fd = open_at(AT_FDCWD, seams.proc_self_cgroup, O_RDONLY);
  if (!fd) return steps;
  auto text = read_up_to(fd->get(), 65536, seams.proc_self_cgroup);
  if (!text) return steps;
  auto lines = parse_proc_cgroup(*text);
  if (!lines) return steps;
  for (const auto& ctl : v1_controllers()) {
    auto own = path_of(*lines, ctl);
    if (!own || !split_clean_path(*own, "own").ok()) continue;
    std::string dir = fmt::format("{}/{}{}", seams.cgroupfs_root, ctl, *own == "/" ? "" : *own);
    sweep_dir(std::string(backend_name(Backend::kCgroupV1)), dir, grace_ms, seams, steps);
  }
  auto own2 = path_of(*lines, "");
  auto root = open_at(AT_FDCWD, seams.cgroupfs_root, O_RDONLY | O_DIRECTORY);
  if (own2 && root && split_clean_path(*own2, "own").ok()) {
    auto mount = find_v2_mount(root->get(), seams);
    if (mount) {
      std::string base = seams.cgroupfs_root + (mount->empty() ? "" : "/" + *mount);
      // If we live in a leaf we made for ourselves, our groups are its siblings.
      std::string own = *own2;
      auto leaf = parse_group_dir_name(basename_of(own));
      if (leaf && leaf->run_id == kControllerLeafRunId) own = own.substr(0, own.rfind('/'));
      sweep_dir(std::string(backend_name(Backend::kCgroupV2)), base + (own == "/" ? "" : own),
                grace_ms, seams, steps);
    }
  }
  return steps;
}

}  // namespace sealrun::resgroup
