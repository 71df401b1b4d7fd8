// SPDX-License-Identifier: Apache-2.0
// --vary fileordering: see run_fileordering.h.
#include "controller/run/run_fileordering.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "core/syscall.h"
#include "core/temp_dir.h"
#include "fingerprint/source_snapshot.h"

namespace sealrun::run {

namespace {

constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

// Removes the copy when the last holder lets go.
struct CopyHolder {
  explicit CopyHolder(std::string p) : path(std::move(p)) {}
  CopyHolder(const CopyHolder&) = delete;
  CopyHolder& operator=(const CopyHolder&) = delete;
  ~CopyHolder() { remove_tree_forcibly(path); }
  std::string path;
};

// Walks `a` and `b` (the same tree) together, counting directories of two entries or more and
// those among them that list in another order.
Status compare_orders(int a, int b, const std::string& shown, ReorderResult* r) {
  std::vector<std::string> in_a = list_dir_names(a);
  std::vector<std::string> in_b = list_dir_names(b);
  if (in_a.size() >= 2) {
    ++r->directories;
    if (in_a != in_b) ++r->reordered;
  }
  for (const std::string& name : in_a) {
    auto st = SEALRUN_TRY(lstat_at(a, name));
    if (!S_ISDIR(st.st_mode)) continue;
    auto sub_a = SEALRUN_TRY(open_at(a, name, kDirFlags));
    auto sub_b = SEALRUN_TRY(open_at(b, name, kDirFlags));
    SEALRUN_TRY(compare_orders(sub_a.get(), sub_b.get(), shown + "/" + name, r));
  }
  return ok_status();
}

}  // namespace

Result<ReorderResult> reordered_copy(const std::string& source_root, const Manifest& manifest,
                                     const std::string& base, const std::string& name_prefix,
                                     std::shared_ptr<void>* holder) {
  std::string templ = base + "/" + name_prefix + "XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr)
    return Error::from_errno(fmt::format("mkdtemp {}", templ));
  auto copy = std::make_shared<CopyHolder>(templ);
  // Search-only for others: the job user (bwrap resolves binds as it; rootless podman) reaches
  // the copy by path, like the verified copy in STATE/exports.
  if (::chmod(templ.c_str(), 0711) != 0) return Error::from_errno("chmod " + templ);
  ReorderResult r;
  r.path = templ + "/source";
  // Entries are made in the order the verified copy lists them: a tmpfs lists them the other way.
  SEALRUN_TRY_CTX(snapshot_tree(source_root, r.path, SnapshotTimes::kHost),
                  "copy the source onto " + base);
  auto mismatches = SEALRUN_TRY_CTX(verify_manifest(r.path, manifest), "verify the copy");
  if (!mismatches.empty())
    return Error::make(fmt::format("the copy {} does not match the admitted manifest ({}: {})",
                                   r.path, mismatches.front().path, mismatches.front().observed));
  auto a = SEALRUN_TRY(open_at(AT_FDCWD, source_root, kDirFlags));
  auto b = SEALRUN_TRY(open_at(AT_FDCWD, r.path, kDirFlags));
  SEALRUN_TRY(compare_orders(a.get(), b.get(), "", &r));
  *holder = std::move(copy);
  return r;
}

std::string reordered_copy_prefix(const std::string& run_id, pid_t controller_pid,
                                  const std::string& controller_start) {
  return fmt::format("sealrun-fileordering-{}-{}.{}-", run_id, controller_pid, controller_start);
}

std::vector<SweepStep> sweep_reordered_copies(const GrantRecord& r, const std::string& base) {
  std::vector<SweepStep> steps;
  auto dir = open_at(AT_FDCWD, base, kDirFlags);
  if (!dir) return steps;  // no tmpfs there: nothing was made there either
  const std::string prefix = reordered_copy_prefix(r.id, r.controller_pid, r.controller_start);
  for (const std::string& name : list_dir_names(dir->get())) {
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string path = base + "/" + name;
    bool removed = remove_tree_forcibly(path);
    steps.push_back(
        {"reordered source copy " + path,
         removed ? "removed (--vary fileordering; its controller is gone)" : "remove failed",
         !removed});
  }
  return steps;
}

Status vary_file_order(RunContext& run, ContainmentSpec& spec) {
  if (!run.req.vary.fileordering) return ok_status();
  const auto& doc = run.doc();
  if (doc.mounts.source_writable) {
    run.warn(
        "--vary fileordering: not varied, the source is writable (the run's own copy, from which "
        "outputs are taken)");
    return ok_status();
  }
  MountSpec* source = nullptr;
  for (MountSpec& m : spec.mounts)
    if (m.kind == ViewKind::kSource) source = &m;
  if (source == nullptr) return ok_status();
  // Named for this controller as its grant record names it, which is what `sweep` matches.
  const GrantRecord& record = run.journal.record();
  auto r = reordered_copy(
      source->source, doc.source.manifest, "/dev/shm",
      reordered_copy_prefix(run.req.id, record.controller_pid, record.controller_start),
      &run.reordered_source);
  if (!r) return std::move(r).error().context("--vary fileordering");
  source->source = r->path;
  source->image_fd = -1;
  if (r->reordered < r->directories)
    run.warn(fmt::format(
        "--vary fileordering: {} of the source's {} directories with two entries or more list "
        "in the same order as in the control (this kernel's tmpfs lists by creation order)",
        r->directories - r->reordered, r->directories));
  return ok_status();
}

}  // namespace sealrun::run
