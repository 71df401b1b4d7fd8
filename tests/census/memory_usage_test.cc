// The census's memory samples (issue 27 item 3): the counter file is read by descriptor at offset
// 0, a missing or garbled counter is "not measured" (never a census failure), the opener is retried
// until it succeeds, every sample carries the figure, and thinning keeps the memory peak.
#include "census/memory_usage.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "census/census_thread.h"
#include "census/sample.h"
#include "core/syscall.h"
#include "tests/support/temp_dir.h"

namespace sealrun::census {
namespace {

using sealrun::testing::TempDir;
using sealrun::testing::write_text;

TEST(MemoryUsage, ReadsTheDecimalCounterFromOffsetZero) {
  TempDir dir;
  struct Case {
    std::string text;
    std::optional<uint64_t> value;
  };
  for (const Case& c : std::vector<Case>{{"123456\n", 123456},
                                         {"0\n", 0},
                                         {"18446744073709551615\n", UINT64_MAX},
                                         {"18446744073709551616\n", std::nullopt},
                                         {"max\n", std::nullopt},
                                         {"", std::nullopt},
                                         {"12 34\n", std::nullopt}}) {
    write_text(dir / "memory.current", c.text);
    auto fd = open_at(AT_FDCWD, dir / "memory.current", O_RDONLY);
    ASSERT_TRUE(fd.ok());
    EXPECT_EQ(read_counter_file(fd->get()), c.value) << c.text;
    EXPECT_EQ(read_counter_file(fd->get()), c.value) << "read again: " << c.text;
  }
}

TEST(MemoryUsage, TheOpenerIsRetriedUntilItSucceedsThenTheDescriptorIsKept) {
  TempDir dir;
  int opened = 0;
  std::string path = dir / "memory.current";
  auto reader = counter_reader([&]() -> Result<UniqueFd> {
    ++opened;
    return open_at(AT_FDCWD, path, O_RDONLY);
  });
  EXPECT_EQ(reader(), std::nullopt);  // not there yet: a systemd scope before adopt
  EXPECT_EQ(opened, 1);
  write_text(path, "4096\n");
  EXPECT_EQ(reader(), 4096u);
  // The same file is read again (rewritten in place, as the kernel renders it afresh).
  write_text(path, "8192\n");
  EXPECT_EQ(reader(), 8192u);
  EXPECT_EQ(opened, 2);
}

TEST(MemoryUsage, EverySampleCarriesTheFigureAndAMissingOneIsNoCensusFailure) {
  TempDir dir;
  std::filesystem::create_directories(dir / "owned");
  CensusConfig c;
  c.owned_root = dir / "owned";
  c.result_root = dir / "owned";
  c.interval_ms = 5;
  c.limits.free_min_bytes = 0;
  c.limits.ceiling_bytes = UINT64_MAX / 2;
  std::atomic<uint64_t> next{1000};
  std::atomic<bool> readable{true};
  c.memory_usage = [&]() -> std::optional<uint64_t> {
    if (!readable) return std::nullopt;
    return next += 1000;
  };
  CensusThread census(c, nullptr);
  ASSERT_TRUE(census.start().ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  readable = false;
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  census.stop();
  auto samples = census.samples();
  ASSERT_GE(samples.size(), 3u);
  EXPECT_TRUE(samples.front().memory_bytes.has_value());
  EXPECT_FALSE(samples.back().memory_bytes.has_value());
  for (size_t i = 1; i < samples.size(); ++i) {
    if (samples[i].memory_bytes && samples[i - 1].memory_bytes) {
      EXPECT_GT(*samples[i].memory_bytes, *samples[i - 1].memory_bytes);
    }
  }
  EXPECT_FALSE(census.census_failure().has_value());
  EXPECT_TRUE(census.notes().empty());
}

TEST(MemoryUsage, ThinningKeepsTheMemoryPeak) {
  std::vector<Sample> samples(1000);
  for (size_t i = 0; i < samples.size(); ++i) {
    samples[i].t_ms = static_cast<int64_t>(i);
    samples[i].memory_bytes = i == 377 ? 1ull << 40 : i;
  }
  decimate_samples(samples, 16);
  ASSERT_LE(samples.size(), 16u);
  bool peak = false;
  for (const auto& s : samples) peak = peak || s.memory_bytes == 1ull << 40;
  EXPECT_TRUE(peak);
}

}  // namespace
}  // namespace sealrun::census
