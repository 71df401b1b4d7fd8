// SPDX-License-Identifier: Apache-2.0
// The run plan: see run_plan.h.
#include "controller/run/run_plan.h"

#include <fmt/format.h>
#include <unistd.h>

#include "controller/run/run_pipeline.h"
#include "core/generated_etc.h"
#include "core/run_id.h"
#include "core/syscall.h"

namespace sealrun::run {

RunLayout layout_for(const std::string& state_dir, const std::string& id) {
  RunLayout l;
  l.state_dir = state_dir;
  l.owned_root = fmt::format("{}/owned/{}", state_dir, id);
  l.scratch_dir = l.owned_root + "/scratch";
  l.logs_dir = l.owned_root + "/logs";
  l.results_root = fmt::format("{}/results/{}", state_dir, id);
  l.output_dir = l.results_root + "/out";
  l.job_output_dir = l.output_dir;
  l.receipt_path = l.results_root + "/receipt.json";
  return l;
}

std::string generated_run_id(std::string_view prefix) {
  std::string t = utc_timestamp_now();  // 2026-11-30T12:01:02.345Z
  std::string compact;
  for (char c : t.substr(0, 19))
    if (c != '-' && c != ':') compact += c;
  return fmt::format("{}-{}Z-{}", prefix, compact, ::getpid());
}

Status validate_run_id(const std::string& id) {
  if (!is_valid_run_id(id))
    return Error::make(fmt::format("--id {:?}: use {} (it names directories)", id, kRunIdRule));
  return ok_status();
}

std::string default_job_path(const admission::AdmissionDocument& doc) {
  const std::string usual = "/usr/local/bin:/usr/bin:/bin";
  return doc.toolchain ? doc.toolchain->mount_path + "/bin:" + usual : usual;
}

std::map<std::string, std::string> job_environment(const admission::AdmissionDocument& doc) {
  std::map<std::string, std::string> env = doc.env;
  env["SOURCE_DATE_EPOCH"] = std::to_string(doc.source_date_epoch);
  // Without a PATH a compiler driver cannot find its own programs (cc1, as, ld): a new user's
  // first failure. The admission's own PATH always wins.
  if (env.find("PATH") == env.end()) env["PATH"] = default_job_path(doc);
  return env;
}

ContainmentSpec containment_spec(const admission::Admitted& admitted, const RunLayout& layout,
                                 const std::string& id, GrantMode mode, const Variations& vary) {
  const auto& doc = admitted.document();
  ContainmentSpec s;
  s.run_id = id;
  s.owned_root = layout.owned_root;
  s.argv = doc.command.argv;
  s.cwd = doc.command.cwd;
  s.env = job_environment(doc);
  using Access = MountSpec::Access;
  // The view (containment/view_plan.h): each mount says what it is and what pins its bytes.
  s.mounts.push_back(
      {layout.job_source_dir.empty() ? admitted.source_root() : layout.job_source_dir,
       doc.mounts.source, doc.mounts.source_writable ? Access::kWritable : Access::kReadOnly,
       ViewKind::kSource, "sha256:" + doc.source.manifest_sha256});
  if (doc.toolchain)  // without one, the learned closure (or trees, or image) is the toolchain
    s.mounts.push_back({doc.toolchain->root, doc.toolchain->mount_path, Access::kReadOnly,
                        ViewKind::kToolchain, "sha256:" + doc.toolchain->tree_sha256});
  for (const auto& tree : doc.trees)
    s.mounts.push_back({tree.host_path, tree.job_path, Access::kReadOnly, ViewKind::kTree,
                        "sha256:" + tree.tree_sha256});
  // Outputs from the source: its writable copy is where they go, and the one place the census
  // guards as the result; no second, unguarded place to write.
  if (doc.mounts.outputs_from != admission::OutputsFrom::kSource)
    s.mounts.push_back(
        {layout.job_output_dir, doc.mounts.output, Access::kWritable, ViewKind::kOut, {}});
  s.mounts.push_back(
      {layout.scratch_dir, doc.mounts.scratch, Access::kWritable, ViewKind::kScratch, {}});
  // An older learned admission's pins at the job's generated /etc paths are left out: sealrun
  // makes those files for the job (containment/job_etc.h, docs/view.md).
  for (const auto& f : doc.host_files)
    if (!is_generated_etc_path(f.path))
      s.files_and_links.push_back(
          {f.path, ViewKind::kClosure, f.path, "sha256:" + f.sha256, false, {}, -1});
  for (const auto& l : doc.host_links)
    if (!is_generated_etc_path(l.path))
      s.files_and_links.push_back(
          {l.path, ViewKind::kLink, {}, "symlink:" + l.target, false, l.target, -1});
  // Directories the job looked up or listed: present (the pin is the admission's list itself).
  for (const auto& d : doc.host_dirs)
    s.files_and_links.push_back({d, ViewKind::kDir, {}, "directory", false, {}, -1});
  if (doc.image) s.image = ImageRef{doc.image->archive, doc.image->image_id};
  s.requested = DimensionSet::all();
  s.required = doc.containment.required;
  s.mode = mode;
  s.memory_high_bytes = doc.limits.memory_high_bytes;
  s.memory_max_bytes = doc.limits.memory_max_bytes;
  s.swap_max_bytes = doc.limits.swap_max_bytes;
  s.pids_max = doc.limits.pids_max;
  s.wall_clock_ms = static_cast<int64_t>(doc.limits.wall_clock_s) * 1000;
  apply_variations(vary, doc.mounts.source, s);
  return s;
}

void add_learning_mounts(const LearningRun& learning, ContainmentSpec& spec) {
  std::vector<MountSpec> mounts;
  for (const std::string& tree : learning.host_trees) {
    bool pinned_there = false;  // a pin mounted at the same place already shows it
    for (const MountSpec& m : spec.mounts) pinned_there = pinned_there || m.target == tree;
    if (!pinned_there) mounts.push_back({tree, tree, MountSpec::Access::kReadOnly});
  }
  // First, so that the admitted mounts (a toolchain under /usr) are bound over them.
  spec.mounts.insert(spec.mounts.begin(), mounts.begin(), mounts.end());
}

resgroup::GroupLimits group_limits(const admission::Limits& l) {
  return {l.memory_high_bytes, l.memory_max_bytes, l.swap_max_bytes, l.pids_max};
}

census::CensusConfig census_config(const admission::Limits& l, const RunLayout& layout,
                                   const ownedfs::OwnedFs* fs, uint64_t owned_max_inodes) {
  census::CensusConfig c;
  c.owned_root = layout.owned_root;
  c.result_root = layout.results_root;
  c.interval_ms = static_cast<int64_t>(l.census_interval_ms);
  c.limits = {l.owned_max_bytes, l.result_max_bytes, l.free_min_bytes,
              l.ceiling_bytes,   l.reserve_bytes,    owned_max_inodes};
  if (fs) {
    c.owned_kind = census::OwnedKind::kFilesystem;
    c.owned_dev = fs->device;
    c.owned_reserved_inodes = fs->reserved_inodes;
    c.free_root = layout.state_dir;  // the host filesystem that holds the image
  }
  if (layout.job_output_dir != layout.output_dir) c.result_fs_root = layout.job_output_dir;
  return c;
}

}  // namespace sealrun::run
