// SPDX-License-Identifier: Apache-2.0
// The output walker (controller/receipt/output_walk.h) against real trees in a temp dir: kinds
// recorded and never followed, hard links hashed once, the allowance judged before reading (sparse
// and preallocated files), the entry and path bounds, deep trees in linear work, interruption.
#include "controller/receipt/output_walk.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/syscall.h"
#include "tests/support/temp_dir.h"

namespace sealrun::run {
namespace {

using receipt::OutputKind;
using testing::TempDir;
using testing::write_text;

const char* kHelloSha = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";

Result<OutputWalk> walk(const std::string& root, OutputLimits limits = {},
                        const StopCheck& stop = {}) {
  return walk_outputs(root, limits, stop);
}

// A chain of `depth` directories named "d" under `root`, made and removed through directory
// descriptors: its paths are longer than PATH_MAX, so path-based tools cannot remove it.
class DeepChain {
 public:
  DeepChain(const std::string& root, int depth) : root_(root), depth_(depth) {
    int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    for (int i = 0; i < depth; ++i) {
      EXPECT_EQ(::mkdirat(fd, "d", 0755), 0);
      int next = ::openat(fd, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      ::close(fd);
      fd = next;
    }
    int f = ::openat(fd, "f", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    EXPECT_EQ(::write(f, "hello", 5), 5);
    ::close(f);
    ::close(fd);
  }
  ~DeepChain() {
    // Descend to the bottom, then unlink upwards through "..".
    int fd = ::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    for (int i = 0; i < depth_; ++i) {
      int next = ::openat(fd, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      ::close(fd);
      fd = next;
    }
    ::unlinkat(fd, "f", 0);
    for (int i = 0; i < depth_; ++i) {
      int up = ::openat(fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      ::close(fd);
      fd = up;
      ::unlinkat(fd, "d", AT_REMOVEDIR);
    }
    ::close(fd);
  }

 private:
  std::string root_;
  int depth_;
};

TEST(OutputWalk, RecordsEveryKindAndNeverFollowsLinks) {
  TempDir dir;
  std::string out = dir / "out";
  ASSERT_EQ(::mkdir(out.c_str(), 0755), 0);
  write_text(out + "/a", "hello");
  ASSERT_EQ(::symlink("../../../../etc/shadow", (out + "/shadow").c_str()), 0);
  ASSERT_EQ(::symlink("loop", (out + "/loop").c_str()), 0);
  ASSERT_EQ(::symlink("nowhere", (out + "/dangling").c_str()), 0);
  ASSERT_EQ(::mkfifo((out + "/fifo").c_str(), 0644), 0);
  int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::string sock = out + "/sock";
  ASSERT_LT(sock.size(), sizeof(addr.sun_path));
  std::copy(sock.begin(), sock.end(), addr.sun_path);
  ASSERT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ::close(s);
  ASSERT_EQ(::mkdir((out + "/empty").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((out + "/sub").c_str(), 0755), 0);
  write_text(out + "/sub/x", "hello");

  auto w = walk(out);
  ASSERT_TRUE(w.ok()) << w.error().message();
  ASSERT_EQ(w->outputs.size(), 7u);
  const auto& o = w->outputs;
  EXPECT_EQ(o[0].path, "a");
  EXPECT_EQ(o[0].kind, OutputKind::kFile);
  EXPECT_EQ(o[0].sha256, kHelloSha);
  EXPECT_EQ(o[0].size, 5u);
  EXPECT_EQ(o[1].path, "dangling");
  EXPECT_EQ(o[1].kind, OutputKind::kSymlink);
  EXPECT_EQ(o[1].target, "nowhere");
  EXPECT_EQ(o[2].path, "fifo");
  EXPECT_EQ(o[2].kind, OutputKind::kFifo);
  EXPECT_EQ(o[3].path, "loop");
  EXPECT_EQ(o[3].target, "loop");
  EXPECT_EQ(o[4].path, "shadow");
  EXPECT_EQ(o[4].kind, OutputKind::kSymlink);
  EXPECT_EQ(o[4].target, "../../../../etc/shadow");
  EXPECT_EQ(o[5].path, "sock");
  EXPECT_EQ(o[5].kind, OutputKind::kSocket);
  EXPECT_EQ(o[6].path, "sub/x");
  EXPECT_EQ(o[6].sha256, kHelloSha);
  EXPECT_EQ(w->bytes, 10u);
  EXPECT_EQ(w->stats.entries, 9u);  // the two directories count too
  EXPECT_EQ(w->stats.files_hashed, 2u);
}

TEST(OutputWalk, HardLinksAreHashedAndCountedOnce) {
  TempDir dir;
  std::string out = dir / "out";
  ASSERT_EQ(::mkdir(out.c_str(), 0755), 0);
  write_text(out + "/f000", std::string(1 << 20, 'z'));
  for (int i = 1; i < 200; ++i) {
    char name[16];
    std::snprintf(name, sizeof(name), "/f%03d", i);
    ASSERT_EQ(::link((out + "/f000").c_str(), (out + name).c_str()), 0);
  }
  OutputLimits limits;
  limits.max_bytes = 2 << 20;  // 200 links counted once fit; counted per link they would not
  auto w = walk(out, limits);
  ASSERT_TRUE(w.ok()) << w.error().message();
  ASSERT_EQ(w->outputs.size(), 200u);
  EXPECT_EQ(w->stats.files_hashed, 1u);
  EXPECT_EQ(w->stats.bytes_hashed, 1u << 20);
  EXPECT_EQ(w->bytes, 1u << 20);
  EXPECT_EQ(w->outputs[0].path, "f000");
  EXPECT_TRUE(w->outputs[0].hardlink_of.empty());
  for (size_t i = 1; i < w->outputs.size(); ++i) {
    EXPECT_EQ(w->outputs[i].hardlink_of, "f000");
    EXPECT_EQ(w->outputs[i].sha256, w->outputs[0].sha256);
    EXPECT_EQ(w->outputs[i].size, 1u << 20);
  }
}

// The progress hook hears every chunk and every file as it is hashed (what a terminal line shows
// during a long wait), and the last report is the walk's own total.
TEST(OutputWalk, ProgressIsReportedPerChunkAndPerFile) {
  TempDir dir;
  std::string out = dir / "out";
  ASSERT_EQ(::mkdir(out.c_str(), 0755), 0);
  write_text(out + "/big", std::string((3 << 20) + 5, 'b'));  // four chunks of at most 1 MiB
  write_text(out + "/small", "s");
  std::vector<HashProgress> seen;
  auto w = walk_outputs(
      out, OutputLimits{}, [] { return std::optional<std::string>(); },
      [&seen](const HashProgress& p) { seen.push_back(p); });
  ASSERT_TRUE(w.ok()) << w.error().message();
  ASSERT_EQ(seen.size(), 4u + 1u + 1u + 1u) << "a report per chunk and one per file";
  for (size_t i = 1; i < seen.size(); ++i) EXPECT_GE(seen[i].bytes_done, seen[i - 1].bytes_done);
  EXPECT_EQ(seen.back().files_done, 2u);
  EXPECT_EQ(seen.back().bytes_done, (3u << 20) + 5 + 1);
  EXPECT_FALSE(seen.back().walk_complete);
}

TEST(OutputWalk, SparseFilePastTheAllowanceIsRefusedUnread) {
  TempDir dir;
  std::string out = dir / "out";
  ASSERT_EQ(::mkdir(out.c_str(), 0755), 0);
  int fd = ::open((out + "/big").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_EQ(::ftruncate(fd, 200LL << 30), 0);  // 200 GiB, not a block allocated
  ::close(fd);
  OutputLimits limits;
  limits.max_bytes = 1 << 30;
  int64_t t0 = monotonic_ms();
  auto w = walk(out, limits);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().message().find("limits.result_max_bytes"), std::string::npos)
      << w.error().message();
  EXPECT_NE(w.error().message().find("214748364800"), std::string::npos) << w.error().message();
  EXPECT_LT(monotonic_ms() - t0, 30000) << "the sparse file was read";
}

TEST(OutputWalk, PreallocatedBlocksCountWhenLargerThanTheSize) {
  TempDir dir;
  std::string out = dir / "out";
  ASSERT_EQ(::mkdir(out.c_str(), 0755), 0);
  int fd = ::open((out + "/held").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  int rc = ::fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 8 << 20);
  ::close(fd);
  if (rc != 0) GTEST_SKIP() << "the temp file system cannot preallocate (" << errno << ")";
  OutputLimits limits;
  limits.max_bytes = 1 << 20;
  auto w = walk(out, limits);
  ASSERT_FALSE(w.ok()) << "an empty file holding 8 MiB passed a 1 MiB allowance";
  EXPECT_NE(w.error().message().find("allocated"), std::string::npos) << w.error().message();
}

TEST(OutputWalk, EntriesPastTheLimitAreRefusedEmptyDirectoriesToo) {
  for (bool dirs : {false, true}) {
    TempDir dir;
    std::string out = dir / "out";
    ASSERT_EQ(::mkdir(out.c_str(), 0755), 0);
    for (int i = 0; i < 101; ++i) {
      std::string p = out + "/e" + std::to_string(i);
      if (dirs)
        ASSERT_EQ(::mkdir(p.c_str(), 0755), 0);
      else
        write_text(p, "");
    }
    OutputLimits limits;
    limits.max_entries = 100;
    auto w = walk(out, limits);
    ASSERT_FALSE(w.ok()) << (dirs ? "101 empty directories" : "101 files") << " were accepted";
    EXPECT_NE(w.error().message().find("more than 100 entries"), std::string::npos)
        << w.error().message();
    limits.max_entries = 101;
    EXPECT_TRUE(walk(out, limits).ok());
  }
}

TEST(OutputWalk, DeepTreePastPathMaxIsRecordedInLinearWork) {
  TempDir dir;
  std::string out = dir / "out";
  ASSERT_EQ(::mkdir(out.c_str(), 0755), 0);
  constexpr int kDepth = 3000;
  DeepChain chain(out, kDepth);
  auto w = walk(out);
  ASSERT_TRUE(w.ok()) << w.error().message();
  ASSERT_EQ(w->outputs.size(), 1u);
  std::string expected;
  for (int i = 0; i < kDepth; ++i) expected += "d/";
  expected += "f";
  EXPECT_GT(expected.size(), 4096u);
  EXPECT_EQ(w->outputs[0].path, expected);
  EXPECT_EQ(w->outputs[0].sha256, kHelloSha);
  EXPECT_EQ(w->stats.directories, static_cast<uint64_t>(kDepth));
  // One open down and one back up per directory, plus the root and the file: nothing resolves a
  // path from the root again, which is what made deep trees quadratic.
  EXPECT_EQ(w->stats.opens, 2u * kDepth + 2);

  OutputLimits limits;
  limits.max_path_bytes = 1000;
  auto refused = walk(out, limits);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("longer than 1000 bytes"), std::string::npos)
      << refused.error().message();
}

TEST(OutputWalk, NamesAreKeptAsRawBytes) {
  TempDir dir;
  std::string out = dir / "out";
  ASSERT_EQ(::mkdir(out.c_str(), 0755), 0);
  const std::string names[] = {"a\377", "a\376", "a\357\277\275", "nl\nfake line", "esc\033[31m"};
  for (const auto& n : names) write_text(out + "/" + n, "x");
  auto w = walk(out);
  ASSERT_TRUE(w.ok()) << w.error().message();
  ASSERT_EQ(w->outputs.size(), 5u);
  std::set<std::string> seen;
  for (const auto& o : w->outputs) seen.insert(o.path);
  for (const auto& n : names) EXPECT_EQ(seen.count(n), 1u) << n;
}

TEST(OutputWalk, StopEndsHashingBetweenChunks) {
  TempDir dir;
  std::string out = dir / "out";
  ASSERT_EQ(::mkdir(out.c_str(), 0755), 0);
  write_text(out + "/big", std::string(64 << 20, 'q'));
  int asked = 0;
  StopCheck stop = [&]() -> std::optional<std::string> {
    if (++asked > 3) return std::string("controller received SIGTERM");
    return std::nullopt;
  };
  auto w = walk(out, {}, stop);
  ASSERT_TRUE(w.ok()) << w.error().message();
  ASSERT_TRUE(w->interrupted.has_value());
  EXPECT_NE(w->interrupted->find("SIGTERM"), std::string::npos) << *w->interrupted;
  EXPECT_TRUE(w->outputs.empty());
  EXPECT_LT(w->stats.bytes_hashed, 64u << 20);
}

}  // namespace
}  // namespace sealrun::run
