// SPDX-License-Identifier: Apache-2.0
// A helper thread that starts on another processor than the thread creating it.
//
// Why: a new thread is queued wherever the scheduler puts it at clone(2), and on the 2-core VMs we
// build on it was often queued behind its own creator and first ran 3-4 ms later (in 3 of 8 quiet
// runs of a 130 ms two-walker census, one walker started that late: ~3% of the walk done by one
// core). Here the thread is created stopped with its affinity set to one processor other than the
// creator's (pthread_attr_setaffinity_np: glibc sets it before the thread runs any code), so it
// starts there at once; its first act is to take back the creator's whole affinity mask, so from
// then on the scheduler moves it like any other thread. Where the process may use only one
// processor (or the placement fails), it is an ordinary thread.
#pragma once

#include <pthread.h>

#include <functional>
#include <memory>

#include "core/result.h"

namespace sealrun {

class PlacedThread {
 public:
  // Starts `body`. `nth` spreads several helpers: the nth one starts on the nth processor after the
  // creator's among those the process may use (wrapping, and skipping the creator's). An error
  // (no thread could be created) names the cause; nothing is left running then.
  static Result<std::unique_ptr<PlacedThread>> start(std::function<void()> body, unsigned nth = 0);

  PlacedThread(const PlacedThread&) = delete;
  PlacedThread& operator=(const PlacedThread&) = delete;
  ~PlacedThread();  // joins: a PlacedThread never outlives its body

  void join();

  // The processor the thread was placed on first, or -1 when it was not placed; the creator's
  // processor when start() ran (-1 if unknown); and, once joined, the one the thread's first
  // instruction ran on (what placement is for: the same as first_cpu() when it was placed).
  int first_cpu() const { return first_cpu_; }
  int creator_cpu() const { return creator_cpu_; }
  int started_on_cpu() const { return started_on_cpu_; }

 private:
  PlacedThread() = default;
  pthread_t thread_{};
  bool joinable_ = false;
  int first_cpu_ = -1;
  int creator_cpu_ = -1;
  int started_on_cpu_ = -1;  // written by the thread, read after join
};

// Runs body(i) for every i < n at once: i = 0 on the calling thread, the others on PlacedThreads
// spread over the other processors. A helper that cannot be started has its share run on the
// calling thread afterwards, so that every index runs exactly once; returns when all have.
void run_spread(unsigned n, const std::function<void(unsigned)>& body);

}  // namespace sealrun
