// SPDX-License-Identifier: Apache-2.0
// Hashing a large regular file through read-only shared mappings instead of read(2). The bytes go
// from the page cache straight into SHA-256: no copy into a user buffer, which on a warm tree was
// the largest cost after the digest itself (bench/README.md). The file is mapped in bounded
// windows, so a huge file costs bounded address space and page tables.
//
// A mapped file that another process truncates makes the next access to the lost pages raise
// SIGBUS. A per-thread guard turns that fault into an error for this file; the process-wide
// handler passes any SIGBUS it does not own to the action that was there before.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "core/result.h"
#include "fingerprint/display_name.h"
#include "fingerprint/sha256.h"

namespace sealrun {

// Bytes mapped at a time.
inline constexpr size_t kMapWindowBytes = 16 * 1024 * 1024;

// An address range one hashing thread reserves for its windows. Each window is mapped into the
// next free part of it and stays mapped once hashed; when the range is full, one mmap over the
// whole of it drops every window at once. Unmapping a window of a process with two hashing
// threads costs a TLB shoot-down (an interrupt to the other processor, a VM exit on a virtual
// machine): paid once per range instead of once per file, which is what lets files far smaller
// than a window be mapped instead of copied by read(2) (bench/README.md). A hashed window
// keeps its file referenced until the range is recycled or the region is destroyed. Not
// thread-safe; one per thread.
class MapRegion {
 public:
  static constexpr size_t kBytes = 64 * 1024 * 1024;
  MapRegion();
  ~MapRegion();
  MapRegion(const MapRegion&) = delete;
  MapRegion& operator=(const MapRegion&) = delete;
  // Whether the range could be reserved; if not, map() always fails with ENOMEM.
  bool reserved() const { return base_ != nullptr; }
  // `len` bytes of `fd` from `offset`, read-only and shared, at the next free page of the range
  // (recycling it first when full); MAP_FAILED with errno set on failure, also ENOMEM for a window
  // larger than the range.
  void* map(int fd, size_t len, off_t offset);

 private:
  char* base_ = nullptr;
  size_t used_ = 0;
};

// Feeds the first `size` bytes of `fd` (a regular file) to `sha`. `after_first_chunk` (may be
// empty) is called once after the first `first_chunk_bytes` were hashed, outside any guarded
// access (a test seam: lets a test change the file mid-hash). A file that became shorter than
// `size` while it was read is an error naming `display`; on any error `sha` holds garbage and
// must be reset by the caller — except errno ENODEV: the file system cannot map files (FUSE with
// direct I/O, say), which shows at the first window, before any byte reached `sha`.
// `progress_bytes` (may be null) grows by each window's size once it is hashed. With a `region`
// (may be null), windows are mapped into it and left there; without, each is unmapped after use.
Status hash_mapped(int fd, uint64_t size, Sha256& sha, const DisplayName& display,
                   size_t first_chunk_bytes, const std::function<void()>& after_first_chunk,
                   std::atomic<uint64_t>* progress_bytes = nullptr, MapRegion* region = nullptr);

}  // namespace sealrun
