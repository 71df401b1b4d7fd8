// SPDX-License-Identifier: Apache-2.0
// Naming what changed in a pinned tree. A tree pin keeps only the tree's digest, so when the digest
// no longer matches, the digest alone cannot say which file moved. The verified digest cache
// (digest_cache.h) holds every entry as it was when the pinned digest was last confirmed; this
// compares the host tree with that record and names the entries that differ, so a refusal can say
// "changed: bin/busybox" instead of only "the digest differs".
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "fingerprint/digest_cache.h"

namespace sealrun {

// `loaded` (a tree's cache as loaded: CachedTreeResult::loaded_before) when it records the tree
// as `expected_sha256` (hex), else nullopt (no cache, or a record of some other state of the tree).
std::optional<DigestCacheContent> recording_as(std::optional<DigestCacheContent> loaded,
                                               const std::string& expected_sha256);

// The entries of `recorded` that are no longer so under `root`: "removed: P", "changed: P" (a
// regular file whose content, size or kind differs; a symlink whose stamp moved). A regular file
// whose inode, size, mtime and ctime are as recorded is taken as unchanged; any other is hashed.
// At most `max` names (then "... and more"). New entries are not listed (the record cannot know
// them); an empty result means only such an addition, or a mode or owner, changed.
std::vector<std::string> changes_since_record(const DigestCacheContent& recorded,
                                              const std::string& root, size_t max = 5);

}  // namespace sealrun
