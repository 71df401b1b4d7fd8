// SPDX-License-Identifier: Apache-2.0
// One switch that stops the job, whoever asks: the census (a guard tripped), a signal to the
// controller (TERM, INT, HUP), or the run's outer deadline. The first reason wins and is what the
// receipt says; the stop action runs at most once, and never at the same time as the pipeline's
// own final stop (both hold the same lock).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "core/result.h"

namespace sealrun::run {

struct StopReason {
  std::string reason;  // for a person: "controller received SIGTERM"
  int exit_code = 0;   // what it means for the run: 5 (failed), 6 (guard)
};

class StopSwitch {
 public:
  // Installs the action once a job runs; a request that came earlier runs it immediately.
  void arm(std::function<void()> action);
  // Forbids further actions (the pipeline's own stop has begun); requests are still recorded.
  void disarm();
  void request(StopReason reason);
  std::optional<StopReason> requested() const;
  // Runs `fn` under the switch's lock, so it never overlaps the stop action.
  void exclusive(const std::function<void()>& fn);

 private:
  mutable std::mutex mu_;
  std::function<void()> action_;
  bool acted_ = false;
  bool disarmed_ = false;
  std::optional<StopReason> reason_;
};

// Blocks SIGTERM, SIGINT and SIGHUP in the calling thread (and so in every thread started after
// it; children get a clean mask from spawn()), and watches for them and for the outer deadline on
// a thread of its own, turning either into a StopSwitch request. Create it before any other thread.
class SignalWatch {
 public:
  SignalWatch(StopSwitch& stop, int64_t outer_deadline_ms);
  ~SignalWatch();
  // Moves the outer deadline (CLOCK_MONOTONIC ms), e.g. once the admission's outer_s is known.
  void set_deadline(int64_t outer_deadline_ms) { deadline_ms_ = outer_deadline_ms; }
  SignalWatch(const SignalWatch&) = delete;
  SignalWatch& operator=(const SignalWatch&) = delete;

 private:
  void loop();
  StopSwitch& stop_;
  std::atomic<int64_t> deadline_ms_;
  std::atomic<bool> quit_{false};
  std::thread thread_;
};

}  // namespace sealrun::run
