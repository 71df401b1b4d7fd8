// SPDX-License-Identifier: Apache-2.0
// Race-checked hashing of one regular file: opened with O_NOFOLLOW, hashed through that descriptor,
// and (dev, ino, size, mtime_ns, ctime_ns) compared before and after, so a file that changed while
// it was read is an error, never a silent wrong hash.
#pragma once

#include <sys/stat.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/result.h"
#include "core/unique_fd.h"
#include "fingerprint/display_name.h"
#include "fingerprint/mapped_hash.h"
#include "fingerprint/sha256.h"

namespace sealrun {

struct FileDigest {
  std::string sha256;  // lower-case hex
  uint64_t bytes = 0;
  std::array<uint8_t, 32> raw{};  // the same digest as bytes
};

// A digest as bytes only, for callers that keep no hex form (the tree's hashing pool).
struct RawFileDigest {
  uint64_t bytes = 0;
  std::array<uint8_t, 32> raw{};
};

// Test seam: called once after the first chunk was read (lets a test rewrite the file mid-hash).
using AfterFirstChunkHook = std::function<void()>;

// Hashes the regular file at `path` relative to `dirfd` (AT_FDCWD for an ordinary path).
Result<FileDigest> hash_file_at(int dirfd, const std::string& path,
                                const AfterFirstChunkHook& hook = {});
inline Result<FileDigest> hash_file(const std::string& path) { return hash_file_at(-100, path); }

// A regular file opened for hashing, with the fstat(2) taken right after open.
struct OpenedRegularFile {
  UniqueFd fd;
  struct stat st {};
};

// Opens `name` relative to `dirfd` with O_NOFOLLOW|O_NOCTTY|O_NONBLOCK (so a FIFO swapped in cannot
// block us) and checks that it is a regular file and the same inode as `walked` (the lstat the
// caller made before deciding to open it; pass nullptr to lstat here first, so that a device or a
// FIFO is refused before it is ever opened). `display` names the file in errors.
Result<OpenedRegularFile> open_regular_at(int dirfd, const std::string& name,
                                          const std::string& display,
                                          const struct stat* walked = nullptr);

// The checks open_regular_at() makes after its open, for a descriptor opened otherwise
// (open_beneath.h): fstat(2) it, refuse anything but a regular file, and require the inode
// (dev, ino) that was looked at.
Result<OpenedRegularFile> adopt_opened_regular(UniqueFd fd, const DisplayName& display, dev_t dev,
                                               ino_t ino);

// Reusable per-thread hashing state: one digest context and one read buffer, so that a tree of
// tens of thousands of small files costs no allocation per file. Not thread-safe; one per thread.
class FileHasher {
 public:
  // Read size: large enough to amortise the syscall, small enough that the bytes the kernel just
  // copied are still in L2 when SHA-256 reads them (measured in bench/hash_tree_bench.cc).
  static constexpr size_t kChunkBytes = 256 * 1024;
  // From this size on a file is hashed through mappings (mapped_hash.h) instead of read(2): the
  // copy saved outweighs mapping and unmapping it (measured in bench/hash_tree_bench.sh).
  static constexpr size_t kMapThresholdBytes = 1024 * 1024;
  // The same for a hasher whose windows go into a MapRegion (mapped_hash.h): there a mapped file
  // costs no unmap of its own, so files from this size on are mapped too. Measured on the
  // toolchain tree (bench/README.md): 16 KiB costs 1% more than 64 KiB, 256 KiB the same.
  static constexpr size_t kRegionMapThresholdBytes = 64 * 1024;

  // `map_region`: keep an address range for mapped windows, for a hasher that hashes many files
  // in a row (a tree's hashing thread).
  explicit FileHasher(bool map_region = false);
  // From this size on, files are hashed through mappings.
  size_t map_threshold() const {
    return region_ != nullptr && region_->reserved() ? kRegionMapThresholdBytes
                                                     : kMapThresholdBytes;
  }
  // Hashes the file through `file.fd` to its end and compares its identity with `file.st`
  // afterwards; a change is an error naming `display`. `progress_bytes` (may be null) grows as
  // bytes are hashed: per mapped window for a large file, at the end for a small one.
  Result<FileDigest> hash_opened(const OpenedRegularFile& file, const DisplayName& display,
                                 const AfterFirstChunkHook& hook = {},
                                 std::atomic<uint64_t>* progress_bytes = nullptr);
  // The same, without forming the digest's hex: no allocation per file.
  Result<RawFileDigest> hash_opened_raw(const OpenedRegularFile& file, const DisplayName& display,
                                        const AfterFirstChunkHook& hook = {},
                                        std::atomic<uint64_t>* progress_bytes = nullptr);
  // Whether the last file hashed through read(2) was not in the page cache when its first read
  // was made (tried with RWF_NOWAIT first, so a cached file costs no extra system call).
  bool last_read_missed_cache() const { return last_read_missed_cache_; }

 private:
  // Feeds the file to sha_ through read(2) until `size` bytes (or EOF); returns the bytes read.
  Result<uint64_t> read_into_digest(int fd, uint64_t size, const DisplayName& display,
                                    const AfterFirstChunkHook& hook);

  Sha256 sha_;
  std::unique_ptr<char[]> buffer_;
  std::unique_ptr<MapRegion> region_;  // null unless asked for
  bool last_read_missed_cache_ = false;
};

}  // namespace sealrun
