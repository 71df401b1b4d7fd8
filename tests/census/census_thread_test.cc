// SPDX-License-Identifier: Apache-2.0
#include "census/census_thread.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <future>
#include <thread>

#include "core/syscall.h"
#include "tests/census/walk_helpers.h"
#include "tests/support/temp_dir.h"

namespace sealrun::census {
namespace {

using sealrun::testing::TempDir;
using sealrun::testing::write_text;

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

CensusConfig small_config(const TempDir& dir) {
  CensusConfig c;
  c.owned_root = dir / "owned";
  c.result_root = dir / "result";
  c.interval_ms = 20;
  c.limits.free_min_bytes = 0;
  c.limits.ceiling_bytes = UINT64_MAX / 2;
  return c;
}

TEST(CensusThread, InodeGuardTripsInADirectory) {
  TempDir dir;
  std::filesystem::create_directories(dir / "owned");
  std::filesystem::create_directories(dir / "result");
  CensusConfig c = small_config(dir);
  c.limits.owned_max_inodes = 100;
  std::promise<void> tripped;
  CensusThread census(c, [&](const GuardTrip& t) {
    if (!t.census_failed()) tripped.set_value();  // called once at most
  });
  ASSERT_TRUE(census.start().ok());
  for (int i = 0; i < 150; ++i) write_text(dir / ("owned/f" + std::to_string(i)), "");
  EXPECT_EQ(tripped.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
  census.stop();
  auto trip = census.trip();
  ASSERT_TRUE(trip.has_value());
  EXPECT_EQ(trip->name, "owned_max_inodes");
  EXPECT_EQ(trip->limit, 100u);
  EXPECT_GE(trip->observed, 100u);
  EXPECT_NE(trip->describe().find("inodes"), std::string::npos) << trip->describe();
  EXPECT_FALSE(census.census_failure().has_value());
}

// A census that cannot measure is not a zero: the sample is flagged with the reason, the callback
// hears "census_failed" once, and the note (folded over repeats) is data for the receipt.
TEST(CensusThread, AnUnreadableTreeIsACensusFailureNotAZero) {
  TempDir dir;
  ::chmod(dir.str().c_str(), 0755);
  std::filesystem::create_directories(dir / "owned/locked");
  std::filesystem::create_directories(dir / "result");
  write_text(dir / "owned/locked/big", std::string(1 << 20, 'x'));
  ::chmod((dir / "owned").c_str(), 0755);
  ::chmod((dir / "result").c_str(), 0755);
  ::chmod((dir / "owned/locked").c_str(), 0);
  std::string out = testing::run_unprivileged([&] {
    CensusConfig c = small_config(dir);
    std::atomic<int> failures{0};
    std::string seen;
    CensusThread census(c, [&](const GuardTrip& t) {
      if (t.census_failed()) {
        failures++;
        seen = t.describe();
      }
    });
    if (!census.start().ok()) return std::string("start failed");
    // Until a few more samples met the same problem (bounded).
    for (int64_t deadline = monotonic_ms() + 10000;
         census.samples().size() < 4 && monotonic_ms() < deadline;)
      std::this_thread::yield();
    census.stop();
    auto samples = census.samples();
    auto notes = census.note_records();
    std::string r = std::to_string(failures.load()) + "|" + seen + "|";
    r += samples.empty() || samples.front().measured() ? "measured|" : "unmeasured|";
    r += notes.size() == 1 ? notes[0].tree + "/" + notes[0].kind + "/" +
                                 std::to_string(notes[0].count > 1) + "|" + notes[0].what
                           : "notes " + std::to_string(notes.size());
    return r;
  });
  EXPECT_EQ(out.rfind("1|census_failed: the growth census could not measure", 0), 0u) << out;
  EXPECT_NE(out.find("|unmeasured|owned/unreadable/1|"), std::string::npos) << out;
  EXPECT_NE(out.find("locked"), std::string::npos) << out;
}

TEST(CensusThread, AVanishedRootIsACensusFailure) {
  TempDir dir;
  std::filesystem::create_directories(dir / "owned");
  std::filesystem::create_directories(dir / "result");
  CensusConfig c = small_config(dir);
  std::atomic<int> failures{0};
  std::promise<void> failed;
  CensusThread census(c, [&](const GuardTrip& t) {
    if (t.census_failed() && failures++ == 0) failed.set_value();
  });
  ASSERT_TRUE(census.start().ok());
  EXPECT_FALSE(census.census_failure().has_value());
  std::filesystem::remove(dir / "owned");
  EXPECT_EQ(failed.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
  census.stop();
  EXPECT_EQ(failures.load(), 1);
  auto failure = census.census_failure();
  ASSERT_TRUE(failure.has_value());
  EXPECT_NE(failure->detail.find("owned"), std::string::npos) << failure->detail;
  EXPECT_FALSE(census.trip().has_value());  // no guard is named for a figure nobody measured
  auto notes = census.note_records();
  ASSERT_FALSE(notes.empty());
  EXPECT_EQ(notes[0].kind, "root_error");
}

TEST(CensusThread, AFileSystemOwnedSpaceMustBeThereAtStart) {
  CensusConfig c;
  c.owned_root = "/nonexistent/owned";
  c.owned_kind = OwnedKind::kFilesystem;
  c.result_root = "/";
  CensusThread census(c, nullptr);
  EXPECT_FALSE(census.start().ok());
}

}  // namespace
}  // namespace sealrun::census
