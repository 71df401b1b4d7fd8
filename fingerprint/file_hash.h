// Race-checked hashing of one regular file: opened with O_NOFOLLOW, hashed through that descriptor,
// and (dev, ino, size, mtime_ns, ctime_ns) compared before and after, so a file that changed while
// it was read is an error, never a silent wrong hash.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "core/result.h"

namespace sealrun {

struct FileDigest {
  std::string sha256;  // lower-case hex
  uint64_t bytes = 0;
};

// Test seam: called once after the first chunk was read (lets a test rewrite the file mid-hash).
using AfterFirstChunkHook = std::function<void()>;

// Hashes the regular file at `path` relative to `dirfd` (AT_FDCWD for an ordinary path).
Result<FileDigest> hash_file_at(int dirfd, const std::string& path,
                                const AfterFirstChunkHook& hook = {});
inline Result<FileDigest> hash_file(const std::string& path) { return hash_file_at(-100, path); }

}  // namespace sealrun
