// The hashing thread pool of the tree walk: see tree_hash_pool.h. Each worker owns one FileHasher
// (digest context + read buffer) for its whole life, so hashing a small file costs no allocation.
#include "fingerprint/tree_hash_pool.h"

#include <algorithm>

namespace sealrun {

HashPool::HashPool(unsigned threads, size_t capacity) : capacity_(std::max<size_t>(capacity, 1)) {
  if (threads <= 1) return;
  workers_.reserve(threads - 1);
  for (unsigned i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
}

HashPool::~HashPool() {
  {
    std::lock_guard lock(mu_);
    queue_.clear();  // closes the queued descriptors
  }
  stop_workers();
}

bool HashPool::submit(Job job) {
  if (failed()) return false;
  if (workers_.empty()) {
    run(job, caller_hasher_);
    return !failed();
  }
  std::optional<Job> own;
  {
    std::lock_guard lock(mu_);
    if (failed()) return false;
    queue_.push_back(std::move(job));
    if (queue_.size() > capacity_) own = take_smallest_locked();
  }
  not_empty_.notify_one();
  // Full: the walker hashes the smallest job rather than sleeping. The smallest, so that the
  // workers still have plenty queued when it comes back to walking.
  if (own) run(*own, caller_hasher_);
  return !failed();
}

std::optional<HashPool::Job> HashPool::take_smallest_locked() {
  if (queue_.empty()) return std::nullopt;
  auto smallest = std::min_element(queue_.begin(), queue_.end(), [](const Job& a, const Job& b) {
    return a.file.st.st_size < b.file.st.st_size;
  });
  Job job = std::move(*smallest);
  queue_.erase(smallest);
  return job;
}

void HashPool::work() {
  FileHasher hasher;
  std::unique_lock lock(mu_);
  for (;;) {
    not_empty_.wait(lock, [&] { return !queue_.empty() || closing_; });
    if (queue_.empty()) return;  // closing and nothing left
    Job job = std::move(queue_.front());
    queue_.pop_front();
    ++busy_;
    lock.unlock();
    if (!failed()) run(job, hasher);
    job.file.fd.reset();
    lock.lock();
    --busy_;
    if (queue_.empty() && busy_ == 0) idle_.notify_all();
  }
}

void HashPool::run(Job& job, FileHasher& hasher) {
  auto digest = hasher.hash_opened(job.file, job.display);
  if (!digest.ok()) {
    record_error(std::move(digest).error());
    return;
  }
  job.entry->bytes = digest->bytes;
  job.entry->sha256 = std::move(digest->sha256);
  done_bytes_.fetch_add(job.entry->bytes, std::memory_order_relaxed);
}

void HashPool::record_error(Error error) {
  {
    std::lock_guard lock(mu_);
    if (!error_) error_ = std::move(error);
  }
  cancel();  // the first error stops the pool as a failed walk does
}

void HashPool::cancel() {
  {
    std::lock_guard lock(mu_);
    failed_.store(true, std::memory_order_relaxed);
    queue_.clear();
  }
  idle_.notify_all();
}

void HashPool::stop_workers() {
  {
    std::lock_guard lock(mu_);
    closing_ = true;
  }
  not_empty_.notify_all();
  for (auto& t : workers_)
    if (t.joinable()) t.join();
  workers_.clear();
}

}  // namespace sealrun
