// SPDX-License-Identifier: Apache-2.0
// The hashing side of the tree walk. The walk submits each regular file it finds as a name and the
// inode it saw, without a descriptor; waiting files are re-opened beneath the root without
// following anything (open_beneath.h) and checked to be the inode the walk saw — by the hashing
// threads themselves while the tree is warm, by an opening thread ahead of them once a read missed
// the page cache — and hashing threads hash opened files.
//
// Why this shape:
// - No descriptor is held while a file waits, so the walk never waits for the hashing: it runs
//   ahead at stat speed whatever the tree's size, and the totals it counts are final early (a
//   progress percentage can be shown as soon as the walk is done, and never runs backwards).
// - Large files first (1 MiB and more, largest first), then the small ones in the order the walk
//   found them: the files left at the end are small, so the threads finish together, and a tree
//   of a few huge files keeps every thread on its own file until the last one. (SHA-256 is
//   sequential within a file, so one file can never use two cores.) Small files need no order,
//   and a queue in walk order costs nothing per file, where a heap of 200,000 would.
// - On a warm tree each hashing thread opens the next waiting file itself: a hand-over to and from
//   an opening thread costs context switches and keeps a third thread runnable on machines with as
//   many cores as hashing threads (2% of the wall on 20,000 warm files, bench/README.md).
// - From the pool's first read that missed the page cache on (a cold tree: a hashing thread's
//   first read came back EAGAIN under RWF_NOWAIT), files are opened ahead by a thread of its own,
//   which keeps kReadyLow..kReadyHigh files opened. While reads keep missing, each file opened is
//   also handed to the kernel's readahead (posix_fadvise WILLNEED), so up to kReadyHigh reads are
//   in flight while the threads hash, instead of one per thread; and a hint that blocks on a busy
//   disk holds up no hashing. Once begun, opening ahead goes on to the end: the hints make the
//   later reads hit the cache, and handing the opens back to the hashing threads whenever reads
//   hit again made a cold tree of small files 16% slower (bench/README.md). On a warm stretch the
//   hint would only cost a system call per file, so it is not given.
// - Threads sleep only when there is nothing for them (a hashing thread: nothing opened and, on a
//   warm tree, nothing waiting; the opening thread: enough opened, or a warm tree), never once per
//   file.
//
// The first error stops the pool: waiting files are dropped and the error is reported once, from
// finish().
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/result.h"
#include "core/syscall.h"
#include "fingerprint/file_hash.h"
#include "fingerprint/tree_walk.h"

namespace sealrun {

class HashPool {
 public:
  // Files opened ahead of the hashing (descriptors held at once: at most kReadyHigh + threads).
  // The opening thread sleeps from kReadyHigh down to kReadyLow: each wake-up opens the gap, and
  // preempts a hashing thread to do it, so a wide gap means fewer switches (bench/README.md).
  static constexpr size_t kReadyLow = 32;
  static constexpr size_t kReadyHigh = 128;

  // The threads start only once kStartFiles files or kStartBytes bytes were submitted: a tree
  // verified through the digest cache (nothing, or a few changed files, to hash) or a small one (a
  // 20-file source, a job's few outputs) is hashed by finish() on the caller's thread, without
  // the start of 2 + N threads and a hand-over per file, which cost more than the hashing itself
  // (a few hundred microseconds quiet, a scheduler wait each on a busy machine: bench/README.md,
  // "Where a realistic run's time goes").
  static constexpr size_t kStartFiles = 32;
  static constexpr uint64_t kStartBytes = 4u << 20;

  // `root_fd` (the walk's root directory) must stay open until finish() returned. threads <= 1:
  // no threads at all; finish() opens and hashes everything on the caller's thread.
  // `stamp_clock` (may be empty: coarse real time) gives each stamp's hashed_at.
  HashPool(int root_fd, const std::string& root_display, unsigned threads,
           std::function<int64_t()> stamp_clock = {});
  ~HashPool();  // stops and joins (dropping waiting work) if finish() was not called
  HashPool(const HashPool&) = delete;
  HashPool& operator=(const HashPool&) = delete;

  struct Job {
    TreeEntry* entry;  // path set; filled in with bytes, sha256 and stamp; must outlive the pool
    uint64_t size;     // from the walk's lstat, for the order
    dev_t dev;         // the inode the walk saw: the opened file must be this one
    ino_t ino;
  };
  // From the walking threads.
  void submit(const Job& job);
  // The walk is over: no more submissions.
  void walk_finished();
  // Drops waiting work and refuses more (the walk failed: its error is the one to report).
  void cancel();
  bool failed() const { return failed_.load(std::memory_order_relaxed); }

  uint64_t done_bytes() const { return done_bytes_.load(std::memory_order_relaxed); }
  uint64_t done_files() const { return done_files_.load(std::memory_order_relaxed); }
  // Files the opening thread opened (the rest were opened by the hashing threads themselves).
  uint64_t opened_ahead() const { return opened_ahead_.load(std::memory_order_relaxed); }

  // Waits until every submitted file was hashed (opening and hashing them on this thread when the
  // pool has no threads), calling `tick` on this thread about every tick_ms (for progress). Call
  // after walk_finished() or cancel(). Returns the first error any file hit.
  template <typename Tick>
  Status finish(Tick&& tick, int tick_ms = 200);

 private:
  struct Opened {
    TreeEntry* entry;
    OpenedRegularFile file;
    int64_t opened_at_ns;  // coarse real time before the open: the stamp's hashed_at
  };

  void open_ahead();                    // the opening thread
  void hash_ready(FileHasher& hasher);  // a hashing thread
  bool take_waiting_locked(Job& out);
  bool waiting_locked() const;
  // Once a read missed the page cache: files are opened ahead by the opening thread (before, the
  // hashing threads open their own).
  bool opening_ahead() const { return missed_.load(std::memory_order_relaxed); }
  std::optional<Opened> open(const Job& job, bool hint);
  void hash(Opened& job, FileHasher& hasher);
  void record_error(Error error);
  bool all_done_locked() const;
  void stop_threads();
  void start_threads_locked();

  const int root_fd_;
  const std::string& root_display_;
  const std::function<int64_t()> stamp_clock_;
  std::mutex mu_;
  std::condition_variable opened_;    // hashing threads: a file was opened, or the end
  std::condition_variable room_;      // the opening thread: room in ready_, work, or the end
  std::condition_variable all_done_;  // finish(): the last file was hashed
  std::vector<Job> large_;            // a max-heap by size
  std::deque<Job> small_;             // in walk order
  std::deque<Opened> ready_;
  size_t opening_ = 0;  // taken by the opening thread, not yet in ready_
  size_t hashing_ = 0;
  size_t idle_hashers_ = 0;  // hashing threads waiting on opened_
  bool walk_done_ = false;
  bool closing_ = false;
  std::optional<Error> error_;
  std::atomic<bool> failed_{false};
  std::atomic<uint64_t> done_bytes_{0};
  std::atomic<uint64_t> done_files_{0};
  std::atomic<uint64_t> opened_ahead_{0};
  // > 0 while recent first reads missed the page cache: files opened now get a readahead hint.
  std::atomic<int> cold_score_{0};
  // A first read missed the page cache at least once in this pool.
  std::atomic<bool> missed_{false};
  const unsigned wanted_threads_;     // hashing threads once started (<= 1: none)
  bool started_ = false;              // under mu_
  size_t submitted_files_ = 0;        // under mu_
  uint64_t submitted_bytes_ = 0;      // under mu_
  std::vector<std::thread> threads_;  // started under mu_ by submit(); read after the walk
};

template <typename Tick>
Status HashPool::finish(Tick&& tick, int tick_ms) {
  if (threads_.empty()) {
    // No threads: open and hash in turn, in the same order the threads would.
    FileHasher hasher;
    int64_t last = monotonic_ms();
    for (;;) {
      Job job;
      {
        std::lock_guard lock(mu_);
        if (failed() || !take_waiting_locked(job)) break;
      }
      auto opened = open(job, false);
      if (opened) hash(*opened, hasher);
      if (monotonic_ms() - last >= tick_ms) {
        tick();
        last = monotonic_ms();
      }
    }
  } else {
    std::unique_lock lock(mu_);
    while (!all_done_locked()) {
      if (all_done_.wait_for(lock, std::chrono::milliseconds(tick_ms)) == std::cv_status::timeout) {
        lock.unlock();
        tick();
        lock.lock();
      }
    }
  }
  stop_threads();
  std::lock_guard lock(mu_);
  if (error_) return *error_;
  return ok_status();
}

}  // namespace sealrun
