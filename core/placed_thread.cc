// SPDX-License-Identifier: Apache-2.0
// See placed_thread.h.
#include "core/placed_thread.h"

#include <sched.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

namespace sealrun {

namespace {

// What the new thread needs: its body, and the mask to take back once it runs.
struct Start {
  std::function<void()> body;
  cpu_set_t allowed;  // the creator's
  bool placed = false;
  int* started_on = nullptr;  // the PlacedThread's started_on_cpu_, outlives the thread
};

// The nth processor after `here` among `allowed`, never `here` itself; -1 when there is none.
int pick_cpu(const cpu_set_t& allowed, int here, unsigned nth) {
  int others[CPU_SETSIZE];
  int count = 0, after = 0;  // `after`: how many of them come before the first one above `here`
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (cpu == here || !CPU_ISSET(cpu, &allowed)) continue;
    if (cpu < here) ++after;
    others[count++] = cpu;
  }
  if (count == 0) return -1;
  return others[(static_cast<unsigned>(after) + nth) % static_cast<unsigned>(count)];
}

void* run_placed(void* arg) {
  std::unique_ptr<Start> start(static_cast<Start*>(arg));
  *start->started_on = sched_getcpu();
  // Free to move again from here on. A failure leaves it on the processor it was placed on, which
  // is still one its creator may use: nothing to report.
  if (start->placed) (void)sched_setaffinity(0, sizeof start->allowed, &start->allowed);
  start->body();
  return nullptr;
}

}  // namespace

Result<std::unique_ptr<PlacedThread>> PlacedThread::start(std::function<void()> body,
                                                          unsigned nth) {
  auto start = std::make_unique<Start>();
  start->body = std::move(body);
  std::unique_ptr<PlacedThread> thread(new PlacedThread());
  start->started_on = &thread->started_on_cpu_;
  pthread_attr_t attr;
  if (int err = pthread_attr_init(&attr); err != 0)
    return Error::make(std::string("pthread_attr_init: ") + std::strerror(err));
  int here = thread->creator_cpu_ = sched_getcpu();
  if (here >= 0 && sched_getaffinity(0, sizeof start->allowed, &start->allowed) == 0) {
    int cpu = pick_cpu(start->allowed, here, nth);
    if (cpu >= 0) {
      cpu_set_t first;
      CPU_ZERO(&first);
      CPU_SET(cpu, &first);
      if (pthread_attr_setaffinity_np(&attr, sizeof first, &first) == 0) {
        start->placed = true;
        thread->first_cpu_ = cpu;
      }
    }
  }
  Start* raw = start.release();  // the new thread owns it from here
  int err = pthread_create(&thread->thread_, &attr, run_placed, raw);
  if (err != 0 && raw->placed) {  // e.g. the processor went offline: start it unplaced instead
    pthread_attr_destroy(&attr);
    pthread_attr_init(&attr);
    raw->placed = false;
    thread->first_cpu_ = -1;
    err = pthread_create(&thread->thread_, &attr, run_placed, raw);
  }
  pthread_attr_destroy(&attr);
  if (err != 0) {
    delete raw;
    return Error::make(std::string("cannot start a thread: ") + std::strerror(err));
  }
  thread->joinable_ = true;
  return thread;
}

void PlacedThread::join() {
  if (!joinable_) return;
  pthread_join(thread_, nullptr);
  joinable_ = false;
}

PlacedThread::~PlacedThread() { join(); }

void run_spread(unsigned n, const std::function<void(unsigned)>& body) {
  std::vector<std::unique_ptr<PlacedThread>> helpers;
  std::vector<unsigned> not_started;
  for (unsigned i = 1; i < n; ++i) {
    auto helper = PlacedThread::start([&body, i] { body(i); }, i - 1);
    if (helper.ok())
      helpers.push_back(std::move(*helper));
    else
      not_started.push_back(i);
  }
  if (n > 0) body(0);
  for (unsigned i : not_started) body(i);
  for (auto& h : helpers) h->join();
}

}  // namespace sealrun
