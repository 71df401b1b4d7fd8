// The hashing thread pool of the tree walk: see tree_hash_pool.h. Each worker owns one FileHasher
// (digest context + read buffer) for its whole life, so hashing a small file costs one read until
// EOF, one fstat and the digest, and no allocation.
#include "fingerprint/tree_hash_pool.h"

namespace sealrun {

HashPool::HashPool(unsigned threads, size_t capacity) : capacity_(capacity) {
  if (threads <= 1) {
    inline_hasher_.emplace();
    return;
  }
  workers_.reserve(threads);
  for (unsigned i = 0; i < threads; ++i) workers_.emplace_back([this] { work(); });
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
  if (inline_hasher_) {
    run(job, *inline_hasher_);
    return !failed();
  }
  std::unique_lock lock(mu_);
  not_full_.wait(lock, [&] { return queue_.size() < capacity_ || failed(); });
  if (failed()) return false;
  queue_.push_back(std::move(job));
  lock.unlock();
  not_empty_.notify_one();
  return true;
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
    not_full_.notify_one();
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
    failed_.store(true, std::memory_order_relaxed);
    queue_.clear();
  }
  not_full_.notify_all();
  idle_.notify_all();
}

void HashPool::cancel() {
  {
    std::lock_guard lock(mu_);
    failed_.store(true, std::memory_order_relaxed);
    queue_.clear();
  }
  not_full_.notify_all();
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
