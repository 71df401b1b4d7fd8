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
inline constexpr uint64_t kBlocksPerGroup = 8 * kBlockBytes;  // one block of block bitmap
inline constexpr uint64_t kInodesPerBlock = kBlockBytes / 256;
// Inodes in use on a new file system that are not the owned space's: ext4 reserves 1–10 (the
// root, inode 2, is the owned space's own) and mke2fs makes lost+found (11), which stays: removing
// it costs a metadata write through the loop device at every creation.
inline constexpr uint64_t kReservedInodes = 10;

Result<std::string> find_mkfs(const Host& host);

}  // namespace sealrun::ownedfs
