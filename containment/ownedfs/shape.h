// SPDX-License-Identifier: Apache-2.0
// The fixed shape of an owned file system (internal to containment/ownedfs): ext4, 4 KiB blocks,
// 256-byte inodes, no journal (the file system lives and dies with one run: a crash discards it,
// so there is nothing to replay), no reserved blocks (all of owned_max_bytes is the job's).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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

// The mkfs.ext4 command line for an image with `inodes` inodes in all. Only what one run needs: no
// journal (the file system is thrown away after the run), no online resize reserve and no backup
// superblocks, the metadata of 64 block groups packed together (fewer, larger extents in the
// image, which also makes unlinking it cheaper), no root-reserved blocks, inode tables not zeroed
// (noinit_itable at mount): the image stays sparse.
std::vector<std::string> mkfs_argv(const std::string& mkfs, const std::string& image,
                                   uint64_t inodes);

}  // namespace sealrun::ownedfs
