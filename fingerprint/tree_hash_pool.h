// A bounded queue of opened regular files and the threads that hash them. The walker submits each
// file already opened (so the pool never resolves a name); at most `capacity` descriptors wait at
// a time, which bounds open files whatever the tree's size. The first error stops the pool: later
// jobs are dropped unhashed and the error is reported once, from finish().
//
// The submitting thread is one of the hashing threads: a pool of N threads starts N - 1 workers,
// and the walker, instead of sleeping when the queue is full, hashes the smallest queued file
// itself (and drains the queue alongside the workers in finish()). So N threads keep N cores busy
// without a walker thread competing with them for a core and waking them once per file, which
// measurably cost a tenth of the run on a 2-core machine (bench/README.md).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/result.h"
#include "fingerprint/file_hash.h"
#include "fingerprint/tree_walk.h"

namespace sealrun {

class HashPool {
 public:
  // threads <= 1: no worker threads; submit() hashes on the caller's thread.
  explicit HashPool(unsigned threads, size_t capacity = 128);
  ~HashPool();  // stops and joins (dropping queued work) if finish() was not called
  HashPool(const HashPool&) = delete;
  HashPool& operator=(const HashPool&) = delete;

  struct Job {
    TreeEntry* entry;  // filled in with bytes and sha256; must outlive the pool's work
    OpenedRegularFile file;
    std::string display;  // names the file in errors
  };
  // Queues a job; when the queue is full, hashes one queued job on the caller's thread first.
  // Returns false once the pool has failed.
  bool submit(Job job);
  bool failed() const { return failed_.load(std::memory_order_relaxed); }
  // Drops queued work and refuses more (the walk failed: its error is the one to report).
  void cancel();
  uint64_t done_bytes() const { return done_bytes_.load(std::memory_order_relaxed); }

  // Hashes the queued work on this thread alongside the workers, then waits for theirs. `tick` is
  // called on this thread between jobs and about every tick_ms while waiting (for progress).
  // Returns the first error any job hit.
  template <typename Tick>
  Status finish(Tick&& tick, int tick_ms = 200);

 private:
  void work();
  // Takes the queued job with the fewest bytes, if any (the caller holds mu_).
  std::optional<Job> take_smallest_locked();
  void run(Job& job, FileHasher& hasher);
  void record_error(Error error);
  void stop_workers();

  std::mutex mu_;
  std::condition_variable not_empty_;
  std::condition_variable idle_;
  std::deque<Job> queue_;
  size_t capacity_;
  size_t busy_ = 0;
  bool closing_ = false;
  std::optional<Error> error_;
  std::atomic<bool> failed_{false};
  std::atomic<uint64_t> done_bytes_{0};
  FileHasher caller_hasher_;  // the submitting thread's own digest state and buffer
  std::vector<std::thread> workers_;
};

template <typename Tick>
Status HashPool::finish(Tick&& tick, int tick_ms) {
  for (;;) {
    std::optional<Job> job;
    {
      std::lock_guard lock(mu_);
      job = take_smallest_locked();
    }
    if (!job) break;
    if (!failed()) run(*job, caller_hasher_);
    tick();
  }
  {
    std::unique_lock lock(mu_);
    while (!(queue_.empty() && busy_ == 0)) {
      if (idle_.wait_for(lock, std::chrono::milliseconds(tick_ms)) == std::cv_status::timeout) {
        lock.unlock();
        tick();
        lock.lock();
      }
    }
  }
  stop_workers();
  std::lock_guard lock(mu_);
  if (error_) return *error_;
  return ok_status();
}

}  // namespace sealrun
