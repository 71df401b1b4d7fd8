#include "census/census_thread.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <future>
#include <thread>

#include "core/syscall.h"
#include "tests/support/temp_dir.h"

namespace sealrun::census {
namespace {

using testing::TempDir;
using testing::write_text;

TEST(CensusThread, TripsOnceWithinAboutOneIntervalAndNamesTheGuard) {
  TempDir dir;
  std::filesystem::create_directories(dir / "owned");
  std::filesystem::create_directories(dir / "result");
  CensusConfig c;
  c.owned_root = dir / "owned";
  c.result_root = dir / "result";
  c.interval_ms = 50;
  c.limits.owned_max_bytes = 1 << 20;
  c.limits.free_min_bytes = 0;
  c.limits.ceiling_bytes = UINT64_MAX / 2;
  std::atomic<int> calls{0};
  std::atomic<int64_t> tripped_at{0};
  std::promise<void> tripped;
  CensusThread census(c, [&](const GuardTrip&) {
    if (calls++ == 0) {
      tripped_at = monotonic_ms();
      tripped.set_value();
    }
  });
  ASSERT_TRUE(census.start().ok());
  int64_t wrote_at = monotonic_ms();
  write_text(dir / "owned/big", std::string(2 << 20, 'x'));
  EXPECT_EQ(tripped.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
  census.stop();
  ASSERT_EQ(calls.load(), 1);
  EXPECT_LT(tripped_at - wrote_at, 500);
  auto trip = census.trip();
  ASSERT_TRUE(trip.has_value());
  EXPECT_EQ(trip->name, "owned_max_bytes");
  EXPECT_GE(trip->observed, 2u << 20);
  EXPECT_GE(census.samples().size(), 2u);
}

TEST(CensusThread, SamplesStayBounded) {
  TempDir dir;
  CensusConfig c;
  c.owned_root = dir.str();
  c.result_root = dir.str();
  c.interval_ms = 1;
  c.max_samples = 16;
  c.limits.free_min_bytes = 0;
  CensusThread census(c, nullptr);
  ASSERT_TRUE(census.start().ok());
  // Until the in-memory list has been decimated at least once (bounded: a few hundred samples).
  for (int64_t deadline = monotonic_ms() + 10000;
       census.dropped() == 0 && monotonic_ms() < deadline;)
    std::this_thread::yield();
  census.stop();
  EXPECT_LE(census.samples().size(), 16u);
  EXPECT_GT(census.dropped(), 0u);
}

TEST(CensusThread, BadRootFailsAtStart) {
  CensusConfig c;
  c.owned_root = "/nonexistent/owned";
  c.result_root = "/nonexistent/result";
  CensusThread census(c, nullptr);
  EXPECT_FALSE(census.start().ok());
}

}  // namespace
}  // namespace sealrun::census
