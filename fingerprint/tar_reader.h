// SPDX-License-Identifier: Apache-2.0
// A small, bounded, read-only tar reader for image archives: ustar (POSIX and GNU magic), GNU long
// names ('L'/'K') and pax extended headers ('x'/'g': path, linkpath, size). It reads the archive
// once, front to back, through a descriptor, hashing the whole archive and every regular member's
// data as it goes, so a caller can check blob digests without reading the archive a second time.
// Every size and count is bounded; member names that are absolute or contain ".." are refused, and
// an archive that ends early (inside a header, inside member data, or without the end-of-archive
// zero block) is an error, never a shorter listing. Nothing is ever written to disk.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace sealrun {

struct TarLimits {
  size_t max_members = 200000;         // real members (meta headers count separately, 4x this)
  size_t max_name_bytes = 4096;        // PATH_MAX: a longer name is refused, not truncated
  size_t max_pax_bytes = 1024 * 1024;  // one pax extended header
};

enum class TarKind { kRegular, kDirectory, kSymlink, kHardlink, kOther };

struct TarMember {
  std::string name;  // normalised: no leading "./" or '/', no trailing '/'; "." for the root
  TarKind kind = TarKind::kOther;
  char typeflag = '0';
  uint64_t size = 0;         // data bytes (0 for everything but regular members)
  uint64_t data_offset = 0;  // where the data starts in the archive
  std::string link_target;   // symlinks and hard links
  std::string sha256;        // lower-case hex of the data, regular members only
  std::string head;          // the first (up to 8) data bytes: tells compressed layers apart
  uint32_t mode = 0;         // permission bits (& 07777)
  uint32_t uid = 0;
  uint32_t gid = 0;
};

struct TarScan {
  std::vector<TarMember> members;  // in archive order
  std::string archive_sha256;      // every byte of the file, trailing padding included
  uint64_t archive_bytes = 0;
};

// Reads the tar archive from `fd` (positioned at its start) to end of file. `what` names the
// archive in errors.
Result<TarScan> scan_tar(int fd, const std::string& what, const TarLimits& limits = {});

// Checks and normalises a member name (also used for names that archive metadata refers to):
// refuses empty names, absolute paths, ".." components, empty components ("a//b") and NUL; strips
// leading "./" and one trailing '/'.
Result<std::string> normalize_member_name(std::string_view raw);

}  // namespace sealrun
