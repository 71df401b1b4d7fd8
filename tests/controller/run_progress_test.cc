// SPDX-License-Identifier: Apache-2.0
// TerminalProgress (controller/run_progress.h): silent when stderr is not a terminal (no callback
// at all, so the hashing code does not even compute progress), and on a terminal one line rewritten
// in place with bytes, percentage and rate, at most ten times a second, erased at the end.
#include "controller/run_progress.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sealrun::run {
namespace {

TEST(TerminalProgress, NotATerminalMeansNoCallbacksAndNoOutput) {
  TerminalProgress p("toolchain", false);
  EXPECT_FALSE(p.on_bytes());
  EXPECT_FALSE(p.on_progress());
}

TEST(TerminalProgress, OnATerminalOneLineIsRewrittenAndErasedAtTheEnd) {
  std::vector<std::string> written;
  {
    TerminalProgress p("toolchain", true);
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
  TerminalProgress p("outputs", true);
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

}  // namespace
}  // namespace sealrun::run
