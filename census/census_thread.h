// The growth-census thread: every interval it measures the owned and result trees and the free
// space, keeps a bounded, decimated list of samples, and when a guard trips it calls the stop
// callback once. It has no authority of its own beyond that callback (DESIGN.md): the controller
// decides what stopping means.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "census/guards.h"
#include "census/sample.h"
#include "census/tree_usage.h"

namespace sealrun::census {

struct CensusConfig {
  std::string owned_root;
  std::string result_root;
  GuardLimits limits;
  int64_t interval_ms = 5000;
  WalkBudget budget;
  size_t max_samples = 4096;  // in memory; decimated to half when full
};

class CensusThread {
 public:
  using StopCallback = std::function<void(const GuardTrip&)>;
  CensusThread(CensusConfig config, StopCallback on_trip);
  ~CensusThread();
  CensusThread(const CensusThread&) = delete;
  CensusThread& operator=(const CensusThread&) = delete;

  // Takes the first sample on the calling thread (so a bad root fails here), then starts sampling.
  Status start();
  // Takes one last sample, stops and joins. Idempotent.
  void stop();

  std::vector<Sample> samples() const;
  uint64_t dropped() const;
  std::optional<GuardTrip> trip() const;
  // Problems met while sampling (a root that vanished, an incomplete walk), for the receipt.
  std::vector<std::string> notes() const;

 private:
  Sample observe();
  void record(const Sample& s);
  void loop();

  CensusConfig config_;
  StopCallback on_trip_;
  int64_t started_ms_ = 0;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::vector<Sample> samples_;
  uint64_t dropped_ = 0;
  std::optional<GuardTrip> trip_;
  std::vector<std::string> notes_;
  std::thread thread_;
};

}  // namespace sealrun::census
