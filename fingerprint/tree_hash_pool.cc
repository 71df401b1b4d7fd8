// The hashing threads of the tree walk: see tree_hash_pool.h. Each worker owns one FileHasher
// (digest context + read buffer) for its whole life, so hashing a small file costs no allocation.
#include "fingerprint/tree_hash_pool.h"

#include <fcntl.h>

#include <algorithm>

#include "fingerprint/file_stamp.h"
#include "fingerprint/open_beneath.h"

namespace sealrun {
namespace {

bool smaller(const HashPool::Job& a, const HashPool::Job& b) { return a.size < b.size; }

// How long the readahead hint stays on after the last read that missed the page cache, in files
// hashed: long enough to cover a batch opened ahead, short enough that a tree whose cold part is
// over stops paying for the hint.
constexpr int kColdScoreOnMiss = 2 * static_cast<int>(HashPool::kReadyHigh);

// The readahead hint covers what read(2) hashes (files below the mapping threshold) and the start
// of a mapped one, whose further pages the kernel's own readahead fetches as the mapping is read.
constexpr off_t kHintBytes = FileHasher::kMapThresholdBytes;

}  // namespace

HashPool::HashPool(int root_fd, const std::string& root_display, unsigned threads,
                   std::function<int64_t()> stamp_clock)
    : root_fd_(root_fd), root_display_(root_display), stamp_clock_(std::move(stamp_clock)) {
  if (threads <= 1) return;
  workers_.reserve(threads);
  for (unsigned i = 0; i < threads; ++i) workers_.emplace_back([this] { work(); });
}

HashPool::~HashPool() {
  cancel();
  stop_workers();
}

void HashPool::submit(const Job& job) {
  bool wake = false;
  {
    std::lock_guard lock(mu_);
    if (failed()) return;
    waiting_.push_back(job);
    std::push_heap(waiting_.begin(), waiting_.end(), smaller);
    wake = sleepers_ > 0;
  }
  if (wake) wake_.notify_one();
}

void HashPool::walk_finished() {
  {
    std::lock_guard lock(mu_);
    walk_done_ = true;
  }
  wake_.notify_all();
  all_done_.notify_all();
}

void HashPool::cancel() {
  {
    std::lock_guard lock(mu_);
    failed_.store(true, std::memory_order_relaxed);
    waiting_.clear();
    ready_.clear();  // closes the descriptors opened ahead
  }
  wake_.notify_all();
  all_done_.notify_all();
}

bool HashPool::all_done_locked() const {
  if (failed()) return true;
  return walk_done_ && waiting_.empty() && ready_.empty() && opening_ == 0 && hashing_ == 0;
}

HashPool::Job HashPool::take_largest_locked() {
  std::pop_heap(waiting_.begin(), waiting_.end(), smaller);
  Job job = waiting_.back();
  waiting_.pop_back();
  return job;
}

void HashPool::work() {
  FileHasher hasher;
  while (hash_one(hasher)) {
  }
}

bool HashPool::hash_one(FileHasher& hasher) {
  std::vector<Job> to_open;
  std::optional<Opened> job;
  {
    std::unique_lock lock(mu_);
    for (;;) {
      if (failed() || closing_) return false;
      if (!ready_.empty() || !waiting_.empty()) break;
      if (walk_done_ && opening_ == 0) return false;  // nothing left, nothing on its way
      if (workers_.empty()) return false;  // no workers: finish() is called after the walk
      ++sleepers_;
      wake_.wait(lock);
      --sleepers_;
    }
    // Top up the files opened ahead in one batch, so that opening happens in runs rather than
    // once per file under the lock.
    if (ready_.size() + opening_ < kReadyLow) {
      while (!waiting_.empty() && ready_.size() + opening_ + to_open.size() < kReadyHigh)
        to_open.push_back(take_largest_locked());
      opening_ += to_open.size();
    }
    if (!ready_.empty()) {
      job = std::move(ready_.front());
      ready_.pop_front();
    }
    ++hashing_;
  }

  std::vector<Opened> opened;
  if (!to_open.empty()) open_batch(to_open, opened);
  if (!job && !opened.empty()) {
    job = std::move(opened.front());
    opened.erase(opened.begin());
  }
  if (!to_open.empty()) {
    bool wake;
    {
      std::lock_guard lock(mu_);
      opening_ -= to_open.size();
      if (!failed())
        for (auto& o : opened) ready_.push_back(std::move(o));
      wake = sleepers_ > 0;
    }
    if (wake) wake_.notify_all();
  }

  if (job && !failed()) hash(*job, hasher);
  job.reset();  // closes the descriptor before the next file is taken
  bool done;
  {
    std::lock_guard lock(mu_);
    --hashing_;
    done = all_done_locked();
  }
  if (done) {
    all_done_.notify_all();
    wake_.notify_all();  // sleeping workers: the end
  }
  return true;
}

void HashPool::open_batch(std::vector<Job>& jobs, std::vector<Opened>& out) {
  out.reserve(jobs.size());
  const bool hint = cold_score_.load(std::memory_order_relaxed) > 0;
  for (const Job& j : jobs) {
    if (failed()) return;
    const int64_t now = stamp_clock_ ? stamp_clock_() : coarse_realtime_ns();
    const std::string display = tree_entry_display(root_display_, j.entry->path);
    auto file =
        open_regular_beneath(root_fd_, std::string(j.entry->path), display, j.dev, j.ino);
    if (!file.ok()) {
      record_error(std::move(file).error());
      return;
    }
    if (hint)
      (void)::posix_fadvise(file->fd.get(), 0, std::min<off_t>(file->st.st_size, kHintBytes),
                            POSIX_FADV_WILLNEED);
    out.push_back(Opened{j.entry, std::move(*file), now});
  }
}

void HashPool::hash(Opened& job, FileHasher& hasher) {
  TreeEntry& e = *job.entry;
  const std::string display = tree_entry_display(root_display_, e.path);
  auto digest = hasher.hash_opened(job.file, display, {}, &done_bytes_);
  if (hasher.last_read_missed_cache())
    cold_score_.store(kColdScoreOnMiss, std::memory_order_relaxed);
  else if (cold_score_.load(std::memory_order_relaxed) > 0)
    cold_score_.fetch_sub(1, std::memory_order_relaxed);
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
  e.stamp = FileStamp{static_cast<uint64_t>(st.st_ino), static_cast<uint64_t>(st.st_size),
                      timespec_ns(st.st_mtim), timespec_ns(st.st_ctim), job.opened_at_ns};
  done_files_.fetch_add(1, std::memory_order_relaxed);
}

void HashPool::record_error(Error error) {
  {
    std::lock_guard lock(mu_);
    if (!error_) error_ = std::move(error);
  }
  cancel();  // the first error stops the pool as a failed walk does
}

void HashPool::stop_workers() {
  {
    std::lock_guard lock(mu_);
    closing_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_)
    if (t.joinable()) t.join();
  workers_.clear();
}

}  // namespace sealrun
