// SPDX-License-Identifier: Apache-2.0
// StopSwitch and SignalWatch: see stop_switch.h.
#include "controller/run/stop_switch.h"

#include <fmt/format.h>
#include <signal.h>

#include <cstring>

#include "core/syscall.h"

namespace sealrun::run {

void StopSwitch::arm(std::function<void()> action) {
  std::lock_guard<std::mutex> lock(mu_);
  action_ = std::move(action);
  if (reason_ && !acted_ && !disarmed_) {
    acted_ = true;
    action_();
  }
}

void StopSwitch::disarm() {
  std::lock_guard<std::mutex> lock(mu_);
  disarmed_ = true;
}

void StopSwitch::request(StopReason reason) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!reason_) reason_ = std::move(reason);
  if (action_ && !acted_ && !disarmed_) {
    acted_ = true;
    action_();
  }
}

std::optional<StopReason> StopSwitch::requested() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reason_;
}

void StopSwitch::exclusive(const std::function<void()>& fn) {
  std::lock_guard<std::mutex> lock(mu_);
  fn();
}

namespace {
// Sent by the destructor to the watching thread so that it ends at once instead of at its next
// tick (which cost every run up to 100 ms of waiting at its end).
int wake_signal() { return SIGRTMIN + 1; }

sigset_t watched_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, wake_signal());
  return set;
}
}  // namespace

SignalWatch::SignalWatch(StopSwitch& stop, int64_t outer_deadline_ms)
    : stop_(stop), deadline_ms_(outer_deadline_ms) {
  sigset_t set = watched_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  thread_ = std::thread([this] { loop(); });
}

SignalWatch::~SignalWatch() {
  quit_ = true;
  if (thread_.joinable()) {
    ::pthread_kill(thread_.native_handle(), wake_signal());
    thread_.join();
  }
  // The signals stay blocked: one that arrives now, while the receipt is written and the path
  // printed, must not kill the controller half-way; the process exits with its own code soon.
}

void SignalWatch::loop() {
  sigset_t set = watched_signals();
  bool deadline_reported = false;
  while (!quit_) {
    struct timespec tick {
      0, 100 * 1000 * 1000
    };
    int sig = ::sigtimedwait(&set, nullptr, &tick);
    if (sig > 0 && sig != wake_signal()) {
      stop_.request(
          {fmt::format("controller received SIG{}; the job was stopped", sigabbrev_np(sig)), 5});
    }
    if (!deadline_reported && monotonic_ms() > deadline_ms_) {
      deadline_reported = true;
      stop_.request(
          {"the run exceeded its outer time limit (limits.outer_s); the job was stopped", 5});
    }
  }
}

}  // namespace sealrun::run
