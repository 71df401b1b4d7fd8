// SPDX-License-Identifier: Apache-2.0
// PlacedThread starts a helper on another processor than its creator's (core/placed_thread.h):
// what the thread ran on first, the mask it runs under afterwards, the single-processor case, and
// run_spread running every index exactly once.
#include "core/placed_thread.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <set>
#include <thread>
#include <vector>

namespace sealrun {
namespace {

int allowed_count() {
  cpu_set_t set;
  return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
}

TEST(PlacedThread, StartsOnAnotherProcessorThenRunsUnderTheCreatorsMask) {
  ASSERT_GE(allowed_count(), 2) << "this machine gives the test one processor";
  cpu_set_t creator;
  ASSERT_EQ(sched_getaffinity(0, sizeof creator, &creator), 0);
  for (int round = 0; round < 20; ++round) {
    cpu_set_t in_body;
    CPU_ZERO(&in_body);
    auto t = PlacedThread::start([&] { sched_getaffinity(0, sizeof in_body, &in_body); });
    ASSERT_TRUE(t.ok()) << t.error().message();
    (*t)->join();
    ASSERT_GE((*t)->first_cpu(), 0) << "placed";
    EXPECT_NE((*t)->first_cpu(), (*t)->creator_cpu());
    EXPECT_TRUE(CPU_ISSET((*t)->first_cpu(), &creator));
    // The affinity was in force before the thread's first instruction, not set afterwards.
    EXPECT_EQ((*t)->started_on_cpu(), (*t)->first_cpu()) << "round " << round;
    EXPECT_TRUE(CPU_EQUAL(&in_body, &creator)) << "the body runs free to move, as its creator";
  }
}

TEST(PlacedThread, HelpersAreSpreadOverTheOtherProcessors) {
  ASSERT_GE(allowed_count(), 2);
  std::set<int> firsts;
  std::vector<std::unique_ptr<PlacedThread>> threads;
  int others = allowed_count() - 1;
  for (int nth = 0; nth < others; ++nth) {
    auto t = PlacedThread::start([] {}, static_cast<unsigned>(nth));
    ASSERT_TRUE(t.ok());
    threads.push_back(std::move(*t));
  }
  for (auto& t : threads) {
    t->join();
    EXPECT_NE(t->first_cpu(), t->creator_cpu());
    firsts.insert(t->first_cpu());
  }
  // The creator may move between starts, so two helpers can meet on one processor; but they are
  // not all piled on one when there are several others to spread over.
  EXPECT_GE(static_cast<int>(firsts.size()), std::min(others, 2));
}

TEST(PlacedThread, ACreatorOnOneProcessorStartsAnOrdinaryThread) {
  std::thread creator([] {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
    cpu_set_t in_body;
    CPU_ZERO(&in_body);
    bool ran = false;
    auto t = PlacedThread::start([&] {
      ran = true;
      sched_getaffinity(0, sizeof in_body, &in_body);
    });
    ASSERT_TRUE(t.ok());
    (*t)->join();
    EXPECT_TRUE(ran);
    EXPECT_EQ((*t)->first_cpu(), -1) << "no other processor to place it on";
    EXPECT_TRUE(CPU_EQUAL(&in_body, &one)) << "inherits its creator's single processor";
  });
  creator.join();
}

TEST(RunSpread, RunsEveryIndexExactlyOnceAndTheFirstOnTheCaller) {
  for (unsigned n : {0u, 1u, 2u, 3u, 7u}) {
    std::vector<std::atomic<int>> runs(n);
    std::atomic<bool> zero_on_caller{false};
    const auto caller = std::this_thread::get_id();
    run_spread(n, [&](unsigned i) {
      runs[i].fetch_add(1);
      if (i == 0) zero_on_caller = std::this_thread::get_id() == caller;
    });
    for (unsigned i = 0; i < n; ++i) EXPECT_EQ(runs[i].load(), 1) << "n " << n << " i " << i;
    if (n > 0) {
      EXPECT_TRUE(zero_on_caller.load());
    }
  }
}

}  // namespace
}  // namespace sealrun
