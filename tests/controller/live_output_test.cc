// SPDX-License-Identifier: Apache-2.0
// The live output's parts without a job (controller/run/live_job_log.h): bytes to prefixed,
// escaped, cut lines; and the follower over plain files written by the test, its bound and its
// notice.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>

#include <atomic>

#include "controller/run/live_job_log.h"
#include "core/syscall.h"
#include "tests/support/temp_dir.h"

namespace sealrun::run {
namespace {

using sealrun::testing::TempDir;

std::string cut_all(const std::vector<std::string>& pieces, size_t max_line = 16) {
  LineCutter c(max_line);
  std::string out;
  for (const auto& p : pieces) c.feed(p, "p| ", out);
  c.finish("p| ", out);
  return out;
}

TEST(LineCutter, WholeLinesPrefixedAcrossPieces) {
  EXPECT_EQ(cut_all({"one\ntwo\n"}), "p| one\np| two\n");
  EXPECT_EQ(cut_all({"o", "ne\ntw", "o\nthree"}), "p| one\np| two\np| three\n");
  EXPECT_EQ(cut_all({"\n\n"}), "p| \np| \n");
  EXPECT_EQ(cut_all({}), "");
}

TEST(LineCutter, EscapesWhatATerminalActsOn) {
  EXPECT_EQ(cut_all({"a\033[2Jb\377\r\n"}), "p| a\\x1b[2Jb\\xff\\r\n");
}

TEST(LineCutter, CutsLongLinesAndSkipsTheirRest) {
  const std::string mark = " [sealrun: line cut at 4 bytes]";
  EXPECT_EQ(cut_all({"abcdefgh\nxy\n"}, 4), "p| abcd" + mark + "\np| xy\n");
  EXPECT_EQ(cut_all({"ab", "cd", "ef", "gh", "\nxy"}, 4), "p| abcd" + mark + "\np| xy\n");
  EXPECT_EQ(cut_all({"abcd\n"}, 4), "p| abcd\n");  // exactly the limit is not cut
  // A cut never splits a UTF-8 character: "é" is two bytes.
  EXPECT_EQ(cut_all({"abc\xc3\xa9z\n"}, 4), "p| abc" + mark + "\n");
}

// A pipe that the follower writes to, and the files it follows.
struct Follow {
  TempDir dir;
  UniqueFd dirfd;
  Pipe pipe;
  Follow() {
    dirfd = open_at(AT_FDCWD, dir.str(), O_RDONLY | O_DIRECTORY).value();
    pipe = make_pipe(O_NONBLOCK).value();
  }
  LiveOutputConfig config() const {
    LiveOutputConfig c;
    c.out_fd = pipe.write_end.get();
    return c;
  }
  std::string read_all() {
    std::string text;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(pipe.read_end.get(), buf, sizeof buf)) > 0) text.append(buf, n);
    return text;
  }
};

TEST(LiveOutput, ShowsEachStreamInOrder) {
  Follow f;
  sealrun::testing::write_text(f.dir / "out", "o1\no2\npartial");
  sealrun::testing::write_text(f.dir / "err", "e1\n");
  LiveOutput live(f.config());
  ASSERT_TRUE(live.add_stream(f.dirfd.get(), "out").ok());
  ASSERT_TRUE(live.add_stream(f.dirfd.get(), "err").ok());
  live.stop();  // never started: drained once
  std::string text = f.read_all();
  EXPECT_NE(text.find("job| o1\njob| o2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("job| e1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("job| partial\n"), std::string::npos) << text;
}

TEST(LiveOutput, FollowsGrowthWhileRunning) {
  Follow f;
  sealrun::testing::write_text(f.dir / "out", "");
  auto w = open_at(f.dirfd.get(), "out", O_WRONLY | O_APPEND);
  ASSERT_TRUE(w.ok());
  LiveOutputConfig c = f.config();
  c.interval_ms = 10;
  LiveOutput live(c);
  ASSERT_TRUE(live.add_stream(f.dirfd.get(), "out").ok());
  ASSERT_TRUE(live.start().ok());
  ASSERT_TRUE(write_all(w->get(), "first\n", "out").ok());
  pollfd p{f.pipe.read_end.get(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 30000), 1) << "the line was not shown while followed";
  EXPECT_EQ(f.read_all(), "job| first\n");
  ASSERT_TRUE(write_all(w->get(), "second\n", "out").ok());
  live.stop();
  EXPECT_EQ(f.read_all(), "job| second\n");
}

// Without a terminal a silent job is said to run, every heartbeat_ms of silence (issue 29).
TEST(LiveOutput, HeartbeatWhenNothingWasShownForAWhile) {
  Follow f;
  sealrun::testing::write_text(f.dir / "out", "");
  auto w = open_at(f.dirfd.get(), "out", O_WRONLY | O_APPEND);
  ASSERT_TRUE(w.ok());
  std::atomic<int64_t> now{0};
  LiveOutputConfig c = f.config();
  c.interval_ms = 5;
  c.heartbeat_ms = 5000;
  c.clock = [&now] { return now.load(); };
  LiveOutput live(c);
  ASSERT_TRUE(live.add_stream(f.dirfd.get(), "out").ok());
  ASSERT_TRUE(live.start().ok());
  auto shown_within = [&](int ms) {
    pollfd p{f.pipe.read_end.get(), POLLIN, 0};
    return ::poll(&p, 1, ms) == 1;
  };
  now = 4999;
  EXPECT_FALSE(shown_within(100)) << f.read_all();
  now = 5000;
  ASSERT_TRUE(shown_within(30000));
  EXPECT_EQ(f.read_all(), "job running 5 s\n");
  now = 6000;
  ASSERT_TRUE(write_all(w->get(), "line\n", "out").ok());
  ASSERT_TRUE(shown_within(30000));
  EXPECT_EQ(f.read_all(), "job| line\n");
  now = 10900;  // 4.9 s after the job's line: not yet
  EXPECT_FALSE(shown_within(100)) << f.read_all();
  now = 11000;
  ASSERT_TRUE(shown_within(30000));
  EXPECT_EQ(f.read_all(), "job running 11 s\n");
  live.stop();
  EXPECT_EQ(f.read_all(), "");
}

TEST(LiveOutput, NoHeartbeatUnlessAsked) {
  Follow f;
  sealrun::testing::write_text(f.dir / "out", "");
  std::atomic<int64_t> now{0};
  LiveOutputConfig c = f.config();
  c.interval_ms = 5;
  c.clock = [&now] { return now.load(); };
  LiveOutput live(c);
  ASSERT_TRUE(live.add_stream(f.dirfd.get(), "out").ok());
  ASSERT_TRUE(live.start().ok());
  now = 600000;
  pollfd p{f.pipe.read_end.get(), POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 200), 0);
  live.stop();
  EXPECT_EQ(f.read_all(), "");
}

TEST(LiveOutput, StopsAtTheBoundWithOneNotice) {
  Follow f;
  sealrun::testing::write_text(f.dir / "out", "0123456789\n0123456789\n0123456789\n");
  LiveOutputConfig c = f.config();
  c.max_bytes = 16;
  c.kept_where = "KEPT/";
  LiveOutput live(c);
  ASSERT_TRUE(live.add_stream(f.dirfd.get(), "out").ok());
  live.stop();
  EXPECT_EQ(f.read_all(),
            "job| 0123456789\njob| 01234\n"
            "sealrun: live output stops here, after 16 bytes of the job's output; the rest is in "
            "its logs, kept in KEPT/\n");
}

TEST(LiveOutput, AHugeSparseFileIsReadOnlyToTheBound) {
  Follow f;
  auto w = open_at(f.dirfd.get(), "out", O_WRONLY | O_CREAT, 0600);
  ASSERT_TRUE(w.ok());
  ASSERT_EQ(::ftruncate(w->get(), 1LL << 40), 0);  // 1 TiB of hole
  LiveOutputConfig c = f.config();
  c.max_bytes = 1 << 20;
  c.max_line_bytes = 64;
  LiveOutput live(c);
  ASSERT_TRUE(live.add_stream(f.dirfd.get(), "out").ok());
  int64_t t0 = monotonic_ms();
  live.stop();
  std::string text = f.read_all();
  EXPECT_LT(monotonic_ms() - t0, 20000);
  EXPECT_EQ(text.find("job| \\x00"), 0u) << text.substr(0, 200);
  EXPECT_NE(text.find("line cut at 64 bytes]\nsealrun: live output stops here, after 1 MiB"),
            std::string::npos)
      << text;
}

TEST(LiveOutput, ALinkOrAFifoIsNotFollowed) {
  Follow f;
  ASSERT_EQ(::symlink("/etc/passwd", (f.dir / "link").c_str()), 0);
  ASSERT_EQ(::mkfifo((f.dir / "fifo").c_str(), 0600), 0);
  LiveOutput live(f.config());
  EXPECT_FALSE(live.add_stream(f.dirfd.get(), "link").ok());
  EXPECT_FALSE(live.add_stream(f.dirfd.get(), "fifo").ok());
}

}  // namespace
}  // namespace sealrun::run
