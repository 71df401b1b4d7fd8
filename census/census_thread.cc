// CensusThread: see census_thread.h.
#include "census/census_thread.h"

#include <fmt/format.h>

#include "core/syscall.h"

namespace sealrun::census {

CensusThread::CensusThread(CensusConfig config, StopCallback on_trip)
    : config_(std::move(config)), on_trip_(std::move(on_trip)) {}

CensusThread::~CensusThread() { stop(); }

Sample CensusThread::observe() {
  Sample s;
  s.t_ms = monotonic_ms() - started_ms_;
  auto note = [&](const std::string& what) {
    std::lock_guard<std::mutex> lock(mu_);
    if (notes_.size() < 16) notes_.push_back(what);
  };
  if (auto owned = measure_tree(config_.owned_root, config_.budget); owned) {
    s.owned_bytes = owned->allocated_bytes;
    if (!owned->complete) note(fmt::format("owned walk cut short at {} paths", owned->paths));
  } else {
    note(owned.error().message());
  }
  if (auto result = measure_tree(config_.result_root, config_.budget); result) {
    s.result_bytes = result->allocated_bytes;
    if (!result->complete) note(fmt::format("result walk cut short at {} paths", result->paths));
  } else {
    note(result.error().message());
  }
  if (auto free = free_bytes_at(config_.owned_root); free) {
    s.free_bytes = *free;
  } else {
    note(free.error().message());
    s.free_bytes = UINT64_MAX;  // unknown: do not trip the free guard on a failed statvfs
  }
  return s;
}

void CensusThread::record(const Sample& s) {
  std::optional<GuardTrip> tripped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    samples_.push_back(s);
    if (samples_.size() >= config_.max_samples)
      dropped_ += decimate_samples(samples_, config_.max_samples / 2);
    if (!trip_) {
      trip_ = evaluate_guards(config_.limits, s);
      tripped = trip_;
    }
  }
  // Outside the lock: the callback may take its time stopping the job.
  if (tripped && on_trip_) on_trip_(*tripped);
}

Status CensusThread::start() {
  started_ms_ = monotonic_ms();
  auto owned = measure_tree(config_.owned_root, config_.budget);
  if (!owned) return std::move(owned).error().context("census: owned root");
  auto result = measure_tree(config_.result_root, config_.budget);
  if (!result) return std::move(result).error().context("census: result root");
  record(observe());
  thread_ = std::thread([this] { loop(); });
  return ok_status();
}

void CensusThread::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    wake_.wait_for(lock, std::chrono::milliseconds(config_.interval_ms), [&] { return stopping_; });
    if (stopping_) break;
    lock.unlock();
    record(observe());
    lock.lock();
  }
}

void CensusThread::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
    record(observe());  // the final state, after the job stopped
  }
}

std::vector<Sample> CensusThread::samples() const {
  std::lock_guard<std::mutex> lock(mu_);
  return samples_;
}

uint64_t CensusThread::dropped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_;
}

std::optional<GuardTrip> CensusThread::trip() const {
  std::lock_guard<std::mutex> lock(mu_);
  return trip_;
}

std::vector<std::string> CensusThread::notes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return notes_;
}

}  // namespace sealrun::census
