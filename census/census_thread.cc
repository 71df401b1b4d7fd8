// SPDX-License-Identifier: Apache-2.0
// CensusThread: see census_thread.h.
#include "census/census_thread.h"

#include <fcntl.h>
#include <fmt/format.h>

#include "census/fs_usage.h"
#include "core/syscall.h"

namespace sealrun::census {

CensusThread::CensusThread(CensusConfig config, StopCallback on_trip)
    : config_(std::move(config)), on_trip_(std::move(on_trip)) {
  if (config_.free_root.empty()) config_.free_root = config_.owned_root;
}

CensusThread::~CensusThread() { stop(); }

// Records the problem in the sample (which makes it unmeasured) and in the notes.
void CensusThread::note(Sample& s, const char* tree, const char* kind, const std::string& what) {
  s.unmeasured += fmt::format("{}{}: {}", s.unmeasured.empty() ? "" : "; ", tree, what);
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& n : notes_) {
    if (n.tree == tree && n.kind == kind) {
      ++n.count;
      n.last_ms = s.t_ms;
      return;
    }
  }
  if (notes_.size() >= config_.max_notes) {
    ++notes_dropped_;
    return;
  }
  notes_.push_back(CensusNote{tree, kind, what, s.t_ms, s.t_ms, 1});
}

Sample CensusThread::observe() {
  Sample s;
  s.t_ms = monotonic_ms() - started_ms_;
  auto walk = [&](const std::string& root, const char* tree, uint64_t* bytes, uint64_t* inodes) {
    auto usage = measure_tree(root, config_.budget);
    if (!usage) {
      note(s, tree, "root_error", usage.error().message());
      return;
    }
    *bytes = usage->allocated_bytes;
    if (inodes) *inodes = usage->inodes;
    if (!usage->complete) note(s, tree, "cut_short", usage->unmeasured_reason());
    if (usage->complete && usage->unreadable != 0)
      note(s, tree, "unreadable", usage->unmeasured_reason());
  };
  if (config_.owned_kind == OwnedKind::kFilesystem) {
    if (auto fs = measure_filesystem(config_.owned_root, owned_dev_); fs) {
      s.owned_bytes = fs->used_bytes;
      s.owned_inodes = fs->used_inodes > config_.owned_reserved_inodes
                           ? fs->used_inodes - config_.owned_reserved_inodes
                           : 0;
      s.owned_room_bytes = fs->room_bytes;
      s.owned_room_inodes = fs->room_inodes;
    } else {
      note(s, "owned", "statfs_error", fs.error().message());
    }
  } else {
    walk(config_.owned_root, "owned", &s.owned_bytes, &s.owned_inodes);
  }
  walk(config_.result_root, "result", &s.result_bytes, nullptr);
  if (!config_.result_fs_root.empty()) {
    if (auto fs = measure_filesystem(config_.result_fs_root, result_dev_); fs)
      s.result_bytes += fs->used_bytes;
    else
      note(s, "result", "statfs_error", fs.error().message());
  }
  if (auto free = free_bytes_at(config_.free_root); free) {
    s.free_bytes = *free;
  } else {
    s.free_bytes = kUnbounded;  // unknown: not a reason to name the free guard
    note(s, "free space", "statfs_error", free.error().message());
  }
  if (config_.memory_usage) s.memory_bytes = config_.memory_usage();
  return s;
}

void CensusThread::record(const Sample& s) {
  std::optional<GuardTrip> tripped, failed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    samples_.push_back(s);
    if (samples_.size() >= config_.max_samples)
      dropped_ += decimate_samples(samples_, config_.max_samples / 2);
    // Lower bounds still trip a guard: a partial walk that already passes a limit proves it.
    if (!trip_) {
      trip_ = evaluate_guards(config_.limits, s);
      tripped = trip_;
    }
    if (!s.measured() && !failure_) {
      failure_ = GuardTrip{kCensusFailed, 0, 0, s.t_ms, s.unmeasured};
      failed = failure_;
    }
  }
  // Outside the lock: the callback may take its time stopping the job.
  if (on_trip_) {
    if (tripped) on_trip_(*tripped);
    if (failed) on_trip_(*failed);
  }
}

Status CensusThread::start() {
  started_ms_ = monotonic_ms();
  auto check_dir = [](const std::string& root, const char* what) -> Status {
    auto fd = open_at(AT_FDCWD, root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    if (!fd) return std::move(fd).error().context(fmt::format("census: {} root", what));
    return ok_status();
  };
  SEALRUN_TRY(check_dir(config_.owned_root, "owned"));
  SEALRUN_TRY(check_dir(config_.result_root, "result"));
  if (config_.owned_kind == OwnedKind::kFilesystem) {
    owned_dev_ =
        SEALRUN_TRY_CTX(filesystem_device(config_.owned_root), "census: owned file system");
    if (config_.owned_dev != 0 && owned_dev_ != config_.owned_dev)
      return Error::make(fmt::format("census: {} is not the owned file system (not mounted?)",
                                     config_.owned_root));
  }
  if (!config_.result_fs_root.empty())
    result_dev_ = SEALRUN_TRY_CTX(filesystem_device(config_.result_fs_root),
                                  "census: the result file system");
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

std::optional<GuardTrip> CensusThread::census_failure() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failure_;
}

std::vector<CensusNote> CensusThread::note_records() const {
  std::lock_guard<std::mutex> lock(mu_);
  return notes_;
}

std::vector<std::string> CensusThread::notes() const {
  std::vector<std::string> out;
  for (const auto& n : note_records())
    out.push_back(fmt::format("{}: {}{}", n.tree, n.what,
                              n.count > 1 ? fmt::format(" ({} samples)", n.count) : ""));
  return out;
}

uint64_t CensusThread::notes_dropped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return notes_dropped_;
}

}  // namespace sealrun::census
