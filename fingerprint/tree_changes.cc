// SPDX-License-Identifier: Apache-2.0
// changes_since_record(): see tree_changes.h.
#include "fingerprint/tree_changes.h"

#include <sys/stat.h>

#include "core/hex.h"
#include "fingerprint/file_hash.h"

namespace sealrun {

std::optional<DigestCacheContent> recording_as(std::optional<DigestCacheContent> loaded,
                                               const std::string& expected_sha256) {
  if (!loaded) return std::nullopt;
  const auto& d = loaded->tree_sha256;
  if (to_hex(d.data(), d.size()) != expected_sha256) return std::nullopt;
  return loaded;
}

std::vector<std::string> changes_since_record(const DigestCacheContent& recorded,
                                              const std::string& root, size_t max) {
  std::vector<std::string> out;
  size_t more = 0;
  auto note = [&](const char* what, std::string_view path) {
    if (out.size() < max)
      out.push_back(std::string(what) + ": " + std::string(path));
    else
      ++more;
  };
  for (const CachedEntry& e : recorded.entries) {
    const std::string_view rel = recorded.path(e);
    std::string path = rel == "." ? root : root + "/" + std::string(rel);
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) {
      note("removed", rel);
      continue;
    }
    EntryKind kind = S_ISREG(st.st_mode)   ? EntryKind::kFile
                     : S_ISDIR(st.st_mode) ? EntryKind::kDirectory
                                           : EntryKind::kSymlink;
    if (kind != e.kind) {
      note("changed", rel);
      continue;
    }
    if (kind == EntryKind::kDirectory) continue;
    if (same_inode_state(stamp_of(st), e.stamp)) continue;
    if (kind == EntryKind::kSymlink) {
      note("changed", rel);
      continue;
    }
    auto digest = hash_file(path);
    std::string recorded_hex = to_hex(e.sha256.data(), e.sha256.size());
    if (!digest.ok() || digest->sha256 != recorded_hex) note("changed", rel);
  }
  if (more > 0) out.push_back("... and " + std::to_string(more) + " more");
  return out;
}

}  // namespace sealrun
