// SPDX-License-Identifier: Apache-2.0
// The opening and hashing threads of the tree walk: see tree_hash_pool.h. Each hashing thread
// owns one FileHasher (digest context + read buffer) for its whole life, so hashing a small file
// costs no allocation.
#include "fingerprint/tree_hash_pool.h"

#include <fcntl.h>

#include <algorithm>

#include "fingerprint/file_stamp.h"
#include "fingerprint/open_beneath.h"

namespace sealrun {
namespace {

bool smaller(const HashPool::Job& a, const HashPool::Job& b) { return a.size < b.size; }

// How long the readahead hint stays on after the last read that missed the page cache, in files
// hashed: long enough to cover what was opened ahead, short enough that a tree whose cold part
// is over soon stops paying for the hint.
constexpr int kColdScoreOnMiss = 128;

// The readahead hint covers what read(2) hashes (files below the mapping threshold) and the start
// of a mapped one, whose further pages the kernel's own readahead fetches as the mapping is read.
constexpr off_t kHintBytes = FileHasher::kMapThresholdBytes;

// Files opened by the opening thread before it hands them over, so that the hashing threads see
// the first of a batch early and the lock is taken once per few files rather than once per file.
constexpr size_t kHandOver = 8;

}  // namespace

HashPool::HashPool(int root_fd, const std::string& root_display, unsigned threads,
                   std::function<int64_t()> stamp_clock)
    : root_fd_(root_fd),
      root_display_(root_display),
      stamp_clock_(std::move(stamp_clock)),
      wanted_threads_(threads) {}

void HashPool::start_threads_locked() {
  started_ = true;
  threads_.reserve(wanted_threads_ + 1);
  threads_.emplace_back([this] { open_ahead(); });
  for (unsigned i = 0; i < wanted_threads_; ++i)
    threads_.emplace_back([this] {
      FileHasher hasher(/*map_region=*/true);
      hash_ready(hasher);
    });
}

HashPool::~HashPool() {
  cancel();
  stop_threads();
}

void HashPool::submit(const Job& job) {
  bool wake_opener = false;
  bool wake_hasher = false;
  {
    std::lock_guard lock(mu_);
    if (failed()) return;
    if (job.size >= FileHasher::kMapThresholdBytes) {
      large_.push_back(job);
      std::push_heap(large_.begin(), large_.end(), smaller);
    } else {
      small_.push_back(job);
    }
    // The threads start once there is enough to hash to pay for them (see the header).
    submitted_files_ += 1;
    submitted_bytes_ += job.size;
    if (!started_ && wanted_threads_ > 1 &&
        (submitted_files_ >= kStartFiles || submitted_bytes_ >= kStartBytes))
      start_threads_locked();
    const bool first_waiting = large_.size() + small_.size() == 1;
    // The opening thread sleeps only with nothing to open, enough opened, or a warm tree.
    wake_opener = opening_ahead() && opening_ == 0 && ready_.size() < kReadyLow && first_waiting;
    // A hashing thread sleeps only with nothing to take; on a warm tree it takes waiting files.
    wake_hasher = !opening_ahead() && idle_hashers_ > 0;
  }
  if (wake_opener) room_.notify_one();
  if (wake_hasher) opened_.notify_one();
}

void HashPool::walk_finished() {
  {
    std::lock_guard lock(mu_);
    walk_done_ = true;
  }
  room_.notify_all();
  opened_.notify_all();
  all_done_.notify_all();
}

void HashPool::cancel() {
  {
    std::lock_guard lock(mu_);
    failed_.store(true, std::memory_order_relaxed);
    large_.clear();
    small_.clear();
    ready_.clear();  // closes the descriptors opened ahead
  }
  room_.notify_all();
  opened_.notify_all();
  all_done_.notify_all();
}

bool HashPool::all_done_locked() const {
  if (failed()) return true;
  return walk_done_ && !waiting_locked() && ready_.empty() && opening_ == 0 && hashing_ == 0;
}

bool HashPool::waiting_locked() const { return !large_.empty() || !small_.empty(); }

bool HashPool::take_waiting_locked(Job& out) {
  if (!large_.empty()) {
    std::pop_heap(large_.begin(), large_.end(), smaller);
    out = large_.back();
    large_.pop_back();
    return true;
  }
  if (!small_.empty()) {
    out = small_.front();
    small_.pop_front();
    return true;
  }
  return false;
}

void HashPool::open_ahead() {
  std::vector<Job> batch;
  std::vector<Opened> done;
  std::unique_lock lock(mu_);
  for (;;) {
    room_.wait(lock, [&] {
      return failed() || closing_ ||
             (opening_ahead() && ready_.size() < kReadyLow && waiting_locked()) ||
             (walk_done_ && !waiting_locked());
    });
    if (failed() || closing_ || !waiting_locked()) break;
    batch.clear();
    Job job;
    while (ready_.size() + batch.size() < kReadyHigh && take_waiting_locked(job))
      batch.push_back(job);
    opening_ = batch.size();
    lock.unlock();
    const bool hint = cold_score_.load(std::memory_order_relaxed) > 0;
    for (size_t i = 0; i < batch.size(); ++i) {
      if (failed()) break;
      if (auto o = open(batch[i], hint)) {
        done.push_back(std::move(*o));
        opened_ahead_.fetch_add(1, std::memory_order_relaxed);
      }
      if (done.size() == kHandOver || i + 1 == batch.size()) {
        {
          std::lock_guard hand(mu_);
          for (auto& o : done) ready_.push_back(std::move(o));
          opening_ -= std::min(opening_, done.size());
        }
        done.clear();
        opened_.notify_all();
      }
    }
    lock.lock();
    opening_ = 0;
  }
  lock.unlock();
  opened_.notify_all();
  all_done_.notify_all();
}

void HashPool::hash_ready(FileHasher& hasher) {
  std::unique_lock lock(mu_);
  for (;;) {
    ++idle_hashers_;
    opened_.wait(lock, [&] {
      return failed() || closing_ || !ready_.empty() || (!opening_ahead() && waiting_locked()) ||
             all_done_locked();
    });
    --idle_hashers_;
    if (failed() || closing_) break;
    std::optional<Opened> job;
    if (!ready_.empty()) {
      job = std::move(ready_.front());
      ready_.pop_front();
      ++hashing_;
      const bool wake_opener = opening_ahead() && ready_.size() + 1 == kReadyLow;
      lock.unlock();
      if (wake_opener) room_.notify_one();
    } else {
      // A warm tree: this thread opens the next waiting file itself (see the header).
      Job waiting;
      if (!take_waiting_locked(waiting)) break;  // all done
      ++hashing_;
      const bool wake_peer = waiting_locked() && idle_hashers_ > 0;
      lock.unlock();
      if (wake_peer) opened_.notify_one();
      job = open(waiting, false);
    }
    if (job) {
      hash(*job, hasher);
      job->file.fd.reset();  // closes the descriptor before the next file is taken
    }
    lock.lock();
    --hashing_;
    if (all_done_locked()) {
      lock.unlock();
      all_done_.notify_all();
      opened_.notify_all();  // the other hashing threads: the end
      lock.lock();
    }
  }
}

std::optional<HashPool::Opened> HashPool::open(const Job& j, bool hint) {
  const int64_t now = stamp_clock_ ? stamp_clock_() : coarse_realtime_ns();
  auto file = open_regular_beneath(root_fd_, j.entry->path,
                                   DisplayName(root_display_, j.entry->path), j.dev, j.ino);
  if (!file.ok()) {
    record_error(std::move(file).error());
    return std::nullopt;
  }
  if (hint)
    (void)::posix_fadvise(file->fd.get(), 0, std::min<off_t>(file->st.st_size, kHintBytes),
                          POSIX_FADV_WILLNEED);
  return Opened{j.entry, std::move(*file), now};
}

void HashPool::hash(Opened& job, FileHasher& hasher) {
  if (failed()) return;
  TreeEntry& e = *job.entry;
  auto digest =
      hasher.hash_opened_raw(job.file, DisplayName(root_display_, e.path), {}, &done_bytes_);
  if (hasher.last_read_missed_cache()) {
    cold_score_.store(kColdScoreOnMiss, std::memory_order_relaxed);
    // The pool's first miss wakes the opening thread, which sleeps until then (see the header).
    if (!missed_.exchange(true, std::memory_order_relaxed)) {
      { std::lock_guard lock(mu_); }  // no lost wake-up: the opener is waiting or sees the flag
      room_.notify_one();
    }
  } else if (cold_score_.load(std::memory_order_relaxed) > 0) {
    cold_score_.fetch_sub(1, std::memory_order_relaxed);
  }
  if (!digest.ok()) {
    record_error(std::move(digest).error());
    return;
  }
  // Metadata from the opened descriptor: the same inode whose bytes were hashed.
  const struct stat& st = job.file.st;
  e.mode = st.st_mode & 07777;
  e.uid = st.st_uid;
  e.gid = st.st_gid;
  e.bytes = digest->bytes;
  e.sha256 = digest->raw;
  e.stamp = stamp_of(st, job.opened_at_ns);
  done_files_.fetch_add(1, std::memory_order_relaxed);
}

void HashPool::record_error(Error error) {
  {
    std::lock_guard lock(mu_);
    if (!error_) error_ = std::move(error);
  }
  cancel();  // the first error stops the pool as a failed walk does
}

void HashPool::stop_threads() {
  {
    std::lock_guard lock(mu_);
    closing_ = true;
  }
  room_.notify_all();
  opened_.notify_all();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
}

}  // namespace sealrun
