// SPDX-License-Identifier: Apache-2.0
// TerminalProgress (controller/run/run_progress.h): silent when off (no callback at all, so the
// hashing code does not even compute progress); on a terminal one line rewritten in place with
// bytes, percentage and rate, at most ten times a second, erased at the end; elsewhere plain lines,
// none before 5 s, then at most one every 5 s with the time so far, and a last one at the end.
#include "controller/run/run_progress.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sealrun::run {
namespace {

TEST(TerminalProgress, NotATerminalMeansNoCallbacksAndNoOutput) {
  TerminalProgress p("toolchain", ProgressStyle::kOff);
  EXPECT_FALSE(p.on_bytes());
  EXPECT_FALSE(p.on_progress());
}

TEST(TerminalProgress, OnATerminalOneLineIsRewrittenAndErasedAtTheEnd) {
  std::vector<std::string> written;
  {
    TerminalProgress p("toolchain", ProgressStyle::kTerminal);
    p.set_sink([&](const std::string& s) { written.push_back(s); });
    auto bytes = p.on_bytes();
    ASSERT_TRUE(bytes);
    bytes(0, 4 << 20);
    bytes(1 << 20, 4 << 20);  // within 100 ms of the first: not shown
    bytes(4 << 20, 4 << 20);  // the last is always shown
  }
  ASSERT_EQ(written.size(), 3u);
  EXPECT_EQ(written[0].rfind("\rhashing toolchain: ", 0), 0u) << written[0];
  EXPECT_NE(written[0].find("of 4.0 MiB (0%)"), std::string::npos) << written[0];
  EXPECT_NE(written[1].find("(100%)"), std::string::npos) << written[1];
  EXPECT_EQ(written[1].find("files"), std::string::npos) << "no file counts were given";
  EXPECT_EQ(written[2], "\r\033[K");
}

TEST(TerminalProgress, TheFullPictureShowsFiles) {
  std::vector<std::string> written;
  TerminalProgress p("outputs", ProgressStyle::kTerminal);
  p.set_sink([&](const std::string& s) { written.push_back(s); });
  HashProgress h;
  h.files_found = 10;
  h.bytes_found = 1000;
  h.files_done = 5;
  h.bytes_done = 500;
  h.walk_complete = true;
  p.on_progress()(h);
  ASSERT_EQ(written.size(), 1u);
  EXPECT_NE(written[0].find("5 of 10 files"), std::string::npos) << written[0];
  EXPECT_NE(written[0].find("(50%)"), std::string::npos) << written[0];
}

TEST(TerminalProgress, WithoutATerminalPlainLinesEveryFiveSeconds) {
  std::vector<std::string> written;
  int64_t now = 1000;
  {
    TerminalProgress p("tree /usr", ProgressStyle::kPlain);
    p.set_sink([&](const std::string& s) { written.push_back(s); });
    p.set_clock([&] { return now; });
    auto hook = p.on_progress();
    ASSERT_TRUE(hook);
    HashProgress h;
    h.files_found = 100;
    h.bytes_found = 100 << 20;
    h.walk_complete = true;
    // A report every 250 ms for 12 s: lines at 5 s and 10 s only, none before 5 s.
    for (int i = 0; i <= 48; ++i) {
      h.bytes_done = static_cast<uint64_t>(i) * (2 << 20);
      h.files_done = static_cast<uint64_t>(i) * 2;
      hook(h);
      if (i < 48) now += 250;
    }
  }
  ASSERT_EQ(written.size(), 3u);
  EXPECT_EQ(written[0],
            "hashing tree /usr: 40.0 MiB of 100.0 MiB (40%), 40 of 100 files, 8.0 MiB/s, ETA 8 s, "
            "5 s so far\n");
  EXPECT_NE(written[1].find("(80%)"), std::string::npos) << written[1];
  EXPECT_NE(written[1].find(", 10 s so far\n"), std::string::npos) << written[1];
  EXPECT_NE(written[2].find("96 of 100 files"), std::string::npos) << written[2];
  EXPECT_NE(written[2].find(", ended after 12 s\n"), std::string::npos) << written[2];
  for (const auto& line : written) EXPECT_EQ(line.find('\r'), std::string::npos) << line;
}

TEST(TerminalProgress, WithoutATerminalAShortStepSaysNothing) {
  std::vector<std::string> written;
  int64_t now = 0;
  {
    TerminalProgress p("toolchain", ProgressStyle::kPlain);
    p.set_sink([&](const std::string& s) { written.push_back(s); });
    p.set_clock([&] { return now; });
    auto bytes = p.on_bytes();
    for (int i = 0; i <= 49; ++i, now += 100) bytes(static_cast<uint64_t>(i), 49);  // 4.9 s
  }
  EXPECT_TRUE(written.empty()) << written.front();
}

TEST(ElapsedText, SecondsMinutesHours) {
  EXPECT_EQ(elapsed_text(0), "0 s");
  EXPECT_EQ(elapsed_text(35999), "35 s");
  EXPECT_EQ(elapsed_text(185000), "3 min 05 s");
  EXPECT_EQ(elapsed_text(3720000), "1 h 02 min");
}

TEST(ProgressStyle, QuietIsOff) {
  set_progress_quiet(true);
  EXPECT_EQ(progress_style(), ProgressStyle::kOff);
  EXPECT_FALSE(per_tree_progress());
  TerminalProgress p("x");
  EXPECT_FALSE(p.on_bytes());
  set_progress_quiet(false);
  EXPECT_NE(progress_style(), ProgressStyle::kOff);
}

}  // namespace
}  // namespace sealrun::run
