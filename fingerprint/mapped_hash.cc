// SPDX-License-Identifier: Apache-2.0
// Mapped hashing with a SIGBUS guard: see mapped_hash.h.
//
// The guard: a thread-local record of the range being read and a sigjmp_buf. The SIGBUS handler
// (installed once, SA_SIGINFO|SA_NODEFER) jumps back only when the faulting address lies in the
// range of a guard active on the faulting thread; SIGBUS is synchronous, so it is delivered to the
// thread that touched the page. Jumping out of the digest routine is safe because OpenSSL's
// SHA-256 update takes no lock and allocates nothing; the caller resets the context afterwards.
// SA_NODEFER keeps SIGBUS unblocked inside the handler, so sigsetjmp need not save the signal
// mask (no sigprocmask call per window).
#include "fingerprint/mapped_hash.h"

#include <fmt/format.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <mutex>

namespace sealrun {
namespace {

struct BusGuard {
  const char* begin;
  const char* end;
  sigjmp_buf env;
};

// initial-exec: reading it from a signal handler must not call into the dynamic TLS resolver.
thread_local BusGuard* t_active_guard __attribute__((tls_model("initial-exec"))) = nullptr;
struct sigaction g_previous_action {};

void on_sigbus(int sig, siginfo_t* info, void* context) {
  BusGuard* guard = t_active_guard;
  const char* addr = static_cast<const char*>(info->si_addr);
  if (guard != nullptr && addr >= guard->begin && addr < guard->end) siglongjmp(guard->env, 1);
  // Not a fault of ours: hand it to whoever had SIGBUS before.
  if (g_previous_action.sa_flags & SA_SIGINFO) {
    g_previous_action.sa_sigaction(sig, info, context);
    return;
  }
  if (g_previous_action.sa_handler != SIG_DFL && g_previous_action.sa_handler != SIG_IGN) {
    g_previous_action.sa_handler(sig);
    return;
  }
  // Default action: restore it; returning re-runs the faulting access, which then kills us with
  // SIGBUS exactly as it would have without this handler.
  ::signal(SIGBUS, SIG_DFL);
}

void install_sigbus_handler_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action {};
    action.sa_sigaction = on_sigbus;
    action.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGBUS, &action, &g_previous_action);
  });
}

// The digest reads the mapping in steps of kDigestStepBytes, each step preceded by a prefetch of
// the cache lines kPrefetchAheadBytes further on. Measured (bench/README.md): the hardware
// prefetchers stop at every 4 KiB page of a mapping, so SHA-256 straight from the page cache ran
// at 65% of its speed on data already in the CPU cache; prefetching ahead brings it close to the
// in-memory rate. The steps are small so that each burst of prefetches (16 lines) fits in the
// line-fill buffers and overlaps with the digest of the step before it: with 64 KiB steps (1,024
// prefetches in a burst) the prefetch loop itself stalled on the full buffers and took 10% of the
// CPU on 1 GiB files; with 1 KiB steps the whole run takes 14% less CPU (steps of 256 B-2 KiB and
// distances of 4-64 KiB measured within 2% of each other). A prefetch never faults (an unmapped or
// vanished page is skipped), so it needs no guard of its own.
constexpr size_t kDigestStepBytes = 1024;
constexpr size_t kPrefetchAheadBytes = 16 * 1024;
constexpr size_t kCacheLineBytes = 64;

// The digest of [data, data + len) with the prefetches ahead of it. A function of its own, called
// inside the guard: variables that live across sigsetjmp must stay in memory, so in the guarded
// frame the loop reloaded its pointers from the stack at every line; here they stay in registers,
// and the 16 prefetches of a whole step are straight-line code. Measured against the same loop
// inline (bench/README.md): 3-4% less CPU on 1 GiB files, 2-3% less on the mixed tree.
__attribute__((noinline)) void digest_prefetching(Sha256& sha, const char* data, size_t len) {
  for (size_t line = 0; line < std::min(len, kPrefetchAheadBytes); line += kCacheLineBytes)
    __builtin_prefetch(data + line);
  size_t at = 0;
  for (; at + kPrefetchAheadBytes + kDigestStepBytes <= len; at += kDigestStepBytes) {
    const char* ahead = data + at + kPrefetchAheadBytes;
#pragma GCC unroll 16
    for (size_t line = 0; line < kDigestStepBytes; line += kCacheLineBytes)
      __builtin_prefetch(ahead + line);
    sha.update(data + at, kDigestStepBytes);
  }
  // The tail: the steps above prefetched all of it but its last (less than one step of) lines.
  for (; at < len; at += kDigestStepBytes) {
    const size_t step = std::min(kDigestStepBytes, len - at);
    sha.update(data + at, step);
  }
}

// Hashes [data, data + len); false if a page of it vanished (SIGBUS) while it was read.
bool hash_guarded(Sha256& sha, const char* data, size_t len) {
  BusGuard guard{data, data + len, {}};
  if (sigsetjmp(guard.env, 0) != 0) {
    t_active_guard = nullptr;
    return false;
  }
  t_active_guard = &guard;
  std::atomic_signal_fence(std::memory_order_seq_cst);  // guard visible before the first access
  digest_prefetching(sha, data, len);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  t_active_guard = nullptr;
  return true;
}

// Whether the byte at `offset` is in the page cache: a read that must not wait for the disk.
bool window_cached(int fd, uint64_t offset) {
  char byte;
  struct iovec iov {
    &byte, 1
  };
  return ::preadv2(fd, &iov, 1, static_cast<off_t>(offset), RWF_NOWAIT) == 1;
}

// A window: unmapped when it goes out of scope, unless it lives in a MapRegion.
struct Mapping {
  void* addr = MAP_FAILED;
  size_t len = 0;
  bool in_region = false;
  ~Mapping() {
    if (addr != MAP_FAILED && !in_region) ::munmap(addr, len);
  }
};

// Reserves `len` bytes (at `at` with MAP_FIXED): no access, no memory committed, no page tables
// until a window lands there.
void* reserve(void* at, size_t len, int extra_flags) {
  return ::mmap(at, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | extra_flags, -1,
                0);
}

}  // namespace

MapRegion::MapRegion() {
  void* base = reserve(nullptr, kBytes, 0);
  if (base != MAP_FAILED) base_ = static_cast<char*>(base);
}

MapRegion::~MapRegion() {
  if (base_ != nullptr) ::munmap(base_, kBytes);
}

void* MapRegion::map(int fd, size_t len, off_t offset) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t span = (len + page - 1) / page * page;
  if (base_ == nullptr || span > kBytes || span == 0) {
    errno = ENOMEM;
    return MAP_FAILED;
  }
  if (used_ + span > kBytes) {
    // Replacing the whole range drops every window in it with one TLB flush.
    if (reserve(base_, kBytes, MAP_FIXED) == MAP_FAILED) return MAP_FAILED;
    used_ = 0;
  }
  void* at = ::mmap(base_ + used_, len, PROT_READ, MAP_SHARED | MAP_FIXED, fd, offset);
  if (at == MAP_FAILED) {
    // MAP_FIXED may have taken the reserved pages away before failing: reserve them again, so
    // nothing else can be placed inside the range.
    const int err = errno;
    (void)reserve(base_ + used_, span, MAP_FIXED);
    errno = err;
    return MAP_FAILED;
  }
  used_ += span;
  return at;
}

Status hash_mapped(int fd, uint64_t size, Sha256& sha, const DisplayName& display,
                   size_t first_chunk_bytes, const std::function<void()>& after_first_chunk,
                   std::atomic<uint64_t>* progress_bytes, MapRegion* region) {
  install_sigbus_handler_once();
  auto shrunk = [&] {
    return Error::make(fmt::format(
        "{} became shorter while it was being hashed; hash it again once it is no longer "
        "written to",
        display.str()));
  };
  bool hook_pending = static_cast<bool>(after_first_chunk);
  for (uint64_t offset = 0; offset < size; offset += kMapWindowBytes) {
    Mapping window;
    window.len = static_cast<size_t>(std::min<uint64_t>(kMapWindowBytes, size - offset));
    if (region != nullptr) {
      window.addr = region->map(fd, window.len, static_cast<off_t>(offset));
      window.in_region = window.addr != MAP_FAILED;
    }
    if (window.addr == MAP_FAILED)
      window.addr =
          ::mmap(nullptr, window.len, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(offset));
    if (window.addr == MAP_FAILED) return Error::from_errno(fmt::format("map {}", display.str()));
    // A window already in the page cache is mapped whole at once (one call, not a fault per 16
    // pages), so that the prefetch ahead of the digest reaches mapped pages: a prefetch of a page
    // not mapped yet is dropped, and the digest then waited on memory at every 64 KiB. Measured
    // on 30 files of 20 MiB among 5,970 small ones (bench/README.md): -10% CPU, -14% wall. A
    // window not in the cache is left to faults, so that the kernel's readahead overlaps the disk
    // with the digest instead of reading the whole window first. Such a window is marked
    // MADV_HUGEPAGE, so that what the faults read in lands in the page cache as 2 MiB folios:
    // later mappings of the file (the next hash of a warm tree) then take one page-table entry
    // per 2 MiB instead of 512, which made a warm hash of 30 files of 20 MiB among 5,970 small
    // ones 3-5% cheaper in CPU (bench/README.md); a file read by read(2) or written in small
    // pieces stays in small folios and is mapped page by page. A refusal is only slower.
    if (window_cached(fd, offset + window.len - 1))
      (void)::madvise(window.addr, window.len, MADV_POPULATE_READ);
    else
      (void)::madvise(window.addr, window.len, MADV_HUGEPAGE);
    const char* data = static_cast<const char*>(window.addr);
    size_t done = 0;
    if (hook_pending) {
      done = std::min(first_chunk_bytes, window.len);
      if (!hash_guarded(sha, data, done)) return shrunk();
      hook_pending = false;
      after_first_chunk();
    }
    if (!hash_guarded(sha, data + done, window.len - done)) return shrunk();
    if (progress_bytes != nullptr) progress_bytes->fetch_add(window.len, std::memory_order_relaxed);
  }
  return ok_status();
}

}  // namespace sealrun
