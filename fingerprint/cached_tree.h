// SPDX-License-Identifier: Apache-2.0
// Verifying a pinned tree through the digest cache (docs/digest-cache.md): the semantic-tree-v1
// digest of a tree whose unchanged files are verified by a stat walk instead of being read. A
// regular file whose file system, inode, size, mtime and ctime (ns) equal the cached stamp, and
// whose ctime lies before the second in which it was hashed (file_stamp.h), takes its SHA-256
// from the cache; every other file is hashed, and the cache is then refreshed. Directories,
// symlinks, modes and owners are always read afresh, so the digest is byte for byte the one a
// full hash gives. When every entry's record is vouched for (kind, mode and owner as cached, a
// file's or symlink's stamp holding) and the cache lists no other entry, the inventory would be
// the very one the cache's tree digest was taken of, and that digest is returned without forming
// it again.
//
// Every use yields a PinCacheRecord for the receipt's `pin_cache`. A cached digest never decides
// a failure: when the result differs from the expected digest and any file was verified by stat
// alone, the tree is hashed again in full and that result is the one returned.
//
// Called by the controller around a job (before it starts, after it ended), never from inside
// one: the cache lives in the state directory, which is root-only and not in the job's view.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"
#include "fingerprint/digest_cache.h"
#include "fingerprint/tree.h"

namespace sealrun {

enum class PinCacheStatus {
  kHit,       // every file verified by stat
  kPartial,   // the cache was read; some files were re-hashed (new, changed, or too recent)
  kMiss,      // no cache for this tree yet
  kCorrupt,   // the cache file failed its integrity check or its parse: ignored
  kIgnored,   // the cache file or its directory is not trustworthy (owner, mode): ignored
  kBypassed,  // --rehash: the cache was not read
};
std::string_view pin_cache_status_name(PinCacheStatus status);  // "hit", "partial", ...

struct PinCacheRecord {
  std::string root;
  PinCacheStatus status = PinCacheStatus::kMiss;
  std::string reason;            // why corrupt, ignored, re-hashed in full, or not stored
  uint64_t entries = 0;          // inventory records ("." included)
  uint64_t files = 0;            // regular files
  uint64_t checked_by_stat = 0;  // files whose digest came from the cache after a stat check
  uint64_t rehashed = 0;         // files read and hashed (both passes when confirmed in full)
  // Every entry was vouched for by the cache and the cache lists no other, so the tree's digest
  // is the cache's (no inventory was formed).
  bool digest_from_cache = false;
  bool stored = false;  // the cache was written afterwards
};
// {root, status, entries, files, checked_by_stat, rehashed, digest_from_cache, stored, reason?}
nlohmann::json pin_cache_to_json(const PinCacheRecord& record);

struct CachedTreeRequest {
  std::string root;
  // The cache lives in STATE/cache/digests/; STATE must exist. Empty: no cache at all (status
  // "bypassed", nothing stored), e.g. where no state directory is known.
  std::string state_dir;
  // The pinned digest, when verifying one (see the header comment); nullopt when freezing.
  std::optional<std::string> expected_sha256;
  bool rehash = false;  // `--rehash`: do not read the cache (it is still refreshed)
  TreeOptions tree;     // threads, progress
};

struct CachedTreeResult {
  TreeSummary summary;
  PinCacheRecord pin_cache;
  // The cache as it was before this walk, when one was loaded and believed: what it recorded of
  // the tree (the last confirmed state) stays readable though the walk may have replaced the file.
  std::optional<DigestCacheContent> loaded_before;
};

// The tree's digest (identical to tree_digest(root)) and how it was obtained. Fails only as
// tree_digest() fails (the tree cannot be walked or a file cannot be hashed); a cache that cannot
// be read or written is reported in the record, never an error.
Result<CachedTreeResult> tree_digest_cached(const CachedTreeRequest& request);

// The same, for a caller that only reports how the cache was used: the digest, with the record
// handed to `record` (when set) once the tree was walked.
Result<TreeSummary> tree_digest_reporting(const CachedTreeRequest& request,
                                          const std::function<void(const PinCacheRecord&)>& record);

}  // namespace sealrun
