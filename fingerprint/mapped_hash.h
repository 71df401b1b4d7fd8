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

// Feeds the first `size` bytes of `fd` (a regular file) to `sha`. `after_first_chunk` (may be
// empty) is called once after the first `first_chunk_bytes` were hashed, outside any guarded
// access (a test seam: lets a test change the file mid-hash). A file that became shorter than
// `size` while it was read is an error naming `display`; on any error `sha` holds garbage and
// must be reset by the caller — except errno ENODEV: the file system cannot map files (FUSE with
// direct I/O, say), which shows at the first window, before any byte reached `sha`.
// `progress_bytes` (may be null) grows by each window's size once it is hashed.
Status hash_mapped(int fd, uint64_t size, Sha256& sha, const DisplayName& display,
                   size_t first_chunk_bytes, const std::function<void()>& after_first_chunk,
                   std::atomic<uint64_t>* progress_bytes = nullptr);

}  // namespace sealrun
