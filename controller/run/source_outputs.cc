// SPDX-License-Identifier: Apache-2.0
// Outputs taken from a writable source: see source_outputs.h.
#include "controller/run/source_outputs.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <stdio.h>  // renameat2
#include <sys/stat.h>

#include <algorithm>
#include <map>

#include "controller/common/display_text.h"
#include "core/syscall.h"

namespace sealrun::run {

namespace {

using receipt::OutputKind;
using receipt::OutputRecord;

constexpr size_t kFilesPerStopCheck = 256;

bool is_unchanged(const Manifest& manifest, const OutputRecord& o) {
  auto it =
      std::lower_bound(manifest.begin(), manifest.end(), o.path,
                       [](const ManifestEntry& e, const std::string& p) { return e.path < p; });
  return it != manifest.end() && it->path == o.path && it->bytes == o.size &&
         it->sha256 == o.sha256;
}

// The directory `rel` below `root`, one component at a time (O_NOFOLLOW: never through a link, and
// no path longer than a name is ever resolved); with `make`, missing components are created.
Result<UniqueFd> descend(int root, const std::string& rel, bool make) {
  auto dir = SEALRUN_TRY(open_at(root, ".", O_RDONLY | O_DIRECTORY));
  size_t start = 0;
  while (start < rel.size()) {
    size_t slash = rel.find('/', start);
    if (slash == std::string::npos) slash = rel.size();
    std::string name = rel.substr(start, slash - start);
    if (make && ::mkdirat(dir.get(), name.c_str(), 0755) != 0 && errno != EEXIST)
      return Error::from_errno("mkdir " + display::escape_cut(rel.substr(0, slash), 200));
    dir = SEALRUN_TRY(open_at(dir.get(), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW));
    start = slash + 1;
  }
  return dir;
}

// The directory last descended to on one side, kept while consecutive outputs share it.
struct CachedDir {
  std::string rel;
  UniqueFd fd;

  Result<int> get(int root, const std::string& want, bool make) {
    if (!fd.valid() || rel != want) {
      fd = SEALRUN_TRY(descend(root, want, make));
      rel = want;
    }
    return fd.get();
  }
};

}  // namespace

void keep_changed_source_files(OutputWalk& walk, const Manifest& manifest) {
  std::vector<OutputRecord> kept;
  // An inode's first path in the walk -> its first path among the outputs kept.
  std::map<std::string, std::string> first_kept;
  uint64_t bytes = 0;
  for (auto& o : walk.outputs) {
    if (o.kind != OutputKind::kFile || is_unchanged(manifest, o)) continue;
    if (o.hardlink_of.empty()) {
      first_kept.emplace(o.path, o.path);
    } else if (auto [it, fresh] = first_kept.try_emplace(o.hardlink_of, o.path); fresh) {
      o.hardlink_of.clear();  // its first path was an unchanged input: this one is the first now
    } else {
      o.hardlink_of = it->second;
    }
    if (o.hardlink_of.empty()) bytes += o.size;
    kept.push_back(std::move(o));
  }
  walk.outputs = std::move(kept);
  walk.bytes = bytes;
}

Status move_source_outputs(const StateDir& state, const std::string& source_root,
                           const std::string& output_dir, const OutputWalk& walk,
                           const StopCheck& stop) {
  auto from = SEALRUN_TRY_CTX(state.open(source_root, O_RDONLY | O_DIRECTORY), "the source copy");
  auto to = SEALRUN_TRY_CTX(state.open(output_dir, O_RDONLY | O_DIRECTORY), "the output directory");
  CachedDir from_dir, to_dir;
  size_t moved = 0;
  for (const auto& o : walk.outputs) {
    if (++moved % kFilesPerStopCheck == 0)
      if (auto why = stop())
        return Error::make(fmt::format("interrupted after {} of {} files: {}", moved - 1,
                                       walk.outputs.size(), *why));
    size_t slash = o.path.rfind('/');
    std::string parent = slash == std::string::npos ? "" : o.path.substr(0, slash);
    std::string name = slash == std::string::npos ? o.path : o.path.substr(slash + 1);
    std::string shown = display::escape_cut(o.path, 200);
    int src = SEALRUN_TRY_CTX(from_dir.get(from.get(), parent, false), "output " + shown);
    int dst = SEALRUN_TRY_CTX(to_dir.get(to.get(), parent, true), "output " + shown);
    // RENAME_NOREPLACE: nothing in results/<id>/out is silently replaced.
    if (::renameat2(src, name.c_str(), dst, name.c_str(), RENAME_NOREPLACE) != 0)
      return Error::from_errno("move output " + shown + " out of the source copy");
  }
  return ok_status();
}

}  // namespace sealrun::run
