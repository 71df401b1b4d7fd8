// The fixed shape of an owned file system (internal to containment/ownedfs): ext4, 4 KiB blocks,
// 256-byte inodes, no journal (the file system lives and dies with one run: a crash discards it,
// so there is nothing to replay), no reserved blocks (all of owned_max_bytes is the job's).
#pragma once

#include <cstdint>
#include <string>

#include "containment/ownedfs/ownedfs.h"

namespace sealrun::ownedfs {

inline constexpr uint64_t kBlockBytes = 4096;
inline constexpr uint64_t kMinSizeBytes = 16ULL << 20;
// ext4 reserves inodes 1–10 (the root is inode 2) and mke2fs makes lost+found (removed again);
// one more is the filler directory that makes the inode bound exact.
inline constexpr uint64_t kSpareInodes = 12;

Result<std::string> find_mkfs(const Host& host);

}  // namespace sealrun::ownedfs
