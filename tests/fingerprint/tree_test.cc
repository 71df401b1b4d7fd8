// SPDX-License-Identifier: Apache-2.0
// semantic-tree-v1 inventories of real trees: exact records, raw-byte ordering, symlinks recorded
// and never followed (loops included), FIFOs and sockets refused by name, non-UTF-8 names kept
// losslessly, stable digests that move with every recorded property, the output file's rules, and
// parallel hashing giving the same bytes as one thread.
#include "fingerprint/tree.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/unique_fd.h"
#include "fingerprint/sha256.h"
#include "fingerprint/tree_json.h"
#include "tests/support/temp_dir.h"

namespace sealrun {
namespace {

using ::testing::HasSubstr;
using testing::read_text;
using testing::TempDir;
using testing::write_text;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string inventory_of(const std::string& root, const std::string& out, unsigned threads = 0) {
  TreeOptions options;
  options.threads = threads;
  auto summary = write_tree_inventory(root, out, options);
  EXPECT_TRUE(summary.ok()) << summary.error().message();
  return read_text(out);
}

std::string digest_of(const std::string& root) {
  auto summary = tree_digest(root);
  EXPECT_TRUE(summary.ok()) << summary.error().message();
  return summary.ok() ? summary->sha256 : "";
}

void make_dir(const std::string& path, mode_t mode = 0755) {
  ASSERT_EQ(::mkdir(path.c_str(), mode), 0) << path;
  ASSERT_EQ(::chmod(path.c_str(), mode), 0) << path;  // umask-independent
}
void make_file(const std::string& path, const std::string& bytes, mode_t mode = 0644) {
  write_text(path, bytes);
  ASSERT_EQ(::chmod(path.c_str(), mode), 0) << path;
}

// A small tree in `dir`/t with every recorded kind.
std::string small_tree(const TempDir& dir) {
  const std::string t = dir / "t";
  make_dir(t, 0750);
  make_dir(t + "/sub");
  make_file(t + "/sub/hello.txt", "hello\n");
  make_file(t + "/run.sh", "#!/bin/sh\n", 04755);
  EXPECT_EQ(::symlink("sub/hello.txt", (t + "/link").c_str()), 0);
  EXPECT_EQ(::lchown(t.c_str(), 0, 0), 0);
  return t;
}

TEST(Tree, ExactRecordsForASmallTree) {
  TempDir dir;
  const std::string t = small_tree(dir);
  auto summary = write_tree_inventory(t, dir / "inv.jsonl");
  ASSERT_TRUE(summary.ok()) << summary.error().message();
  const std::string text = read_text(dir / "inv.jsonl");
  const uint32_t uid = ::getuid(), gid = ::getgid();
  auto ids = [&] { return ",\"uid\":" + std::to_string(uid) + ",\"gid\":" + std::to_string(gid); };
  std::vector<std::string> expected = {
      R"({"schema":"semantic-tree-v1"})",
      R"({"path":".","kind":"directory","mode":"0750","uid":0,"gid":0})",
      R"({"path":"link","kind":"symlink","mode":"0777")" + ids() + R"(,"target":"sub/hello.txt"})",
      R"({"path":"run.sh","kind":"file","mode":"4755")" + ids() + R"(,"bytes":10,"sha256":")" +
          sha256_hex("#!/bin/sh\n") + "\"}",
      R"({"path":"sub","kind":"directory","mode":"0755")" + ids() + "}",
      R"({"path":"sub/hello.txt","kind":"file","mode":"0644")" + ids() +
          R"(,"bytes":6,"sha256":")" + sha256_hex("hello\n") + "\"}",
  };
  EXPECT_EQ(lines_of(text), expected);
  EXPECT_EQ(summary->sha256, sha256_hex(text));
  EXPECT_EQ(summary->entries, 5u);
  EXPECT_EQ(summary->regular_bytes, 16u);
  for (const auto& line : lines_of(text)) EXPECT_TRUE(nlohmann::json::accept(line)) << line;
}

TEST(Tree, DigestIsStableAndEqualsTheInventoryDigest) {
  TempDir dir;
  const std::string t = small_tree(dir);
  auto a = write_tree_inventory(t, dir / "a.jsonl");
  auto b = write_tree_inventory(t, dir / "b.jsonl");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->sha256, b->sha256);
  EXPECT_EQ(read_text(dir / "a.jsonl"), read_text(dir / "b.jsonl"));
  EXPECT_EQ(digest_of(t), a->sha256);
}

TEST(Tree, DigestMovesWithContentModeAndSymlinkTarget) {
  TempDir dir;
  const std::string t = small_tree(dir);
  const std::string base = digest_of(t);

  make_file(t + "/sub/hello.txt", "hellp\n");  // one byte
  const std::string byte_changed = digest_of(t);
  EXPECT_NE(byte_changed, base);

  ASSERT_EQ(::chmod((t + "/sub/hello.txt").c_str(), 0600), 0);
  const std::string mode_changed = digest_of(t);
  EXPECT_NE(mode_changed, byte_changed);

  ASSERT_EQ(::unlink((t + "/link").c_str()), 0);
  ASSERT_EQ(::symlink("sub/hello.txT", (t + "/link").c_str()), 0);
  EXPECT_NE(digest_of(t), mode_changed);
}

TEST(Tree, SortedByRawPathBytesNotByWalkOrder) {
  TempDir dir;
  const std::string t = dir / "t";
  make_dir(t);
  make_dir(t + "/a");
  make_file(t + "/a/b", "1");
  make_file(t + "/a.b", "2");
  make_file(t + "/a-", "3");
  make_file(t + "/B", "4");
  std::vector<std::string> paths;
  for (const auto& line : lines_of(inventory_of(t, dir / "inv.jsonl"))) {
    auto j = nlohmann::json::parse(line);
    if (j.contains("path")) paths.push_back(j["path"]);
  }
  // '-' 0x2d < '.' 0x2e < '/' 0x2f, and 'B' 0x42 < 'a' 0x61: a depth-first walk would put "a/b"
  // right after "a".
  EXPECT_EQ(paths, (std::vector<std::string>{".", "B", "a", "a-", "a.b", "a/b"}));
}

TEST(Tree, NonUtf8NameIsKeptLosslesslyAsBase64) {
  TempDir dir;
  const std::string t = dir / "t";
  make_dir(t);
  const std::string raw_name = std::string(
                                   "\xff"
                                   "caf\xff",
                                   5) +
                               "e";
  make_file(t + "/" + raw_name, "x");
  make_file(t + "/plain", "y");
  ASSERT_EQ(::symlink(raw_name.c_str(), (t + "/to-raw").c_str()), 0);
  auto lines = lines_of(inventory_of(t, dir / "inv.jsonl"));
  ASSERT_EQ(lines.size(), 5u);
  // 0xff sorts after every ASCII name.
  auto last = nlohmann::json::parse(lines[4]);
  ASSERT_TRUE(last.contains("path_b64")) << lines[4];
  EXPECT_FALSE(last.contains("path"));
  EXPECT_EQ(tree_json::base64_decode(last["path_b64"].get<std::string>()), raw_name);
  auto link = nlohmann::json::parse(lines[3]);
  EXPECT_EQ(link["path"], "to-raw");
  EXPECT_EQ(tree_json::base64_decode(link["target_b64"].get<std::string>()), raw_name);
}

TEST(Tree, SymlinkLoopsAreRecordedNotFollowed) {
  TempDir dir;
  const std::string t = dir / "t";
  make_dir(t);
  make_dir(t + "/d");
  ASSERT_EQ(::symlink("b", (t + "/a").c_str()), 0);
  ASSERT_EQ(::symlink("a", (t + "/b").c_str()), 0);
  ASSERT_EQ(::symlink("..", (t + "/d/up").c_str()), 0);
  ASSERT_EQ(::symlink(".", (t + "/self").c_str()), 0);
  auto summary = write_tree_inventory(t, dir / "inv.jsonl");
  ASSERT_TRUE(summary.ok()) << summary.error().message();
  EXPECT_EQ(summary->entries, 6u);  // . a b d d/up self
  const std::string text = read_text(dir / "inv.jsonl");
  EXPECT_THAT(text, HasSubstr(R"("path":"d/up","kind":"symlink")"));
  EXPECT_THAT(text, HasSubstr(R"("target":"..")"));
}

TEST(Tree, RootThatIsASymlinkIsRefused) {
  TempDir dir;
  const std::string t = small_tree(dir);
  ASSERT_EQ(::symlink(t.c_str(), (dir / "alias").c_str()), 0);
  auto summary = write_tree_inventory(dir / "alias", dir / "inv.jsonl");
  ASSERT_FALSE(summary.ok());
  EXPECT_THAT(summary.error().message(), HasSubstr("is a symlink"));
  EXPECT_FALSE(std::filesystem::exists(dir / "inv.jsonl"));
}

TEST(Tree, FifoIsAnErrorNamingItAndTheOutputIsRemoved) {
  TempDir dir;
  const std::string t = small_tree(dir);
  ASSERT_EQ(::mkfifo((t + "/sub/pipe").c_str(), 0600), 0);
  auto summary = write_tree_inventory(t, dir / "inv.jsonl");
  ASSERT_FALSE(summary.ok());
  EXPECT_THAT(summary.error().message(), HasSubstr(t + "/sub/pipe"));
  EXPECT_THAT(summary.error().message(), HasSubstr("FIFO"));
  EXPECT_FALSE(std::filesystem::exists(dir / "inv.jsonl")) << "partial output left behind";
}

TEST(Tree, SocketIsAnErrorNamingIt) {
  TempDir dir;
  const std::string t = small_tree(dir);
  const std::string sock_path = t + "/sock";
  UniqueFd sock(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_TRUE(sock.valid());
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(sock_path.size(), sizeof(addr.sun_path));
  std::copy(sock_path.begin(), sock_path.end(), addr.sun_path);
  ASSERT_EQ(::bind(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  auto summary = tree_digest(t);
  ASSERT_FALSE(summary.ok());
  EXPECT_THAT(summary.error().message(), HasSubstr(sock_path));
  EXPECT_THAT(summary.error().message(), HasSubstr("socket"));
}

TEST(Tree, ExistingOutputIsRefusedAndLeftAlone) {
  TempDir dir;
  const std::string t = small_tree(dir);
  write_text(dir / "inv.jsonl", "precious");
  auto summary = write_tree_inventory(t, dir / "inv.jsonl");
  ASSERT_FALSE(summary.ok());
  EXPECT_THAT(summary.error().message(), HasSubstr("already exists"));
  EXPECT_EQ(read_text(dir / "inv.jsonl"), "precious");
}

TEST(Tree, OutputInsideTheTreeIsRefusedAndRemoved) {
  TempDir dir;
  const std::string t = small_tree(dir);
  auto summary = write_tree_inventory(t, t + "/inv.jsonl");
  ASSERT_FALSE(summary.ok());
  EXPECT_THAT(summary.error().message(), HasSubstr("inside the tree"));
  EXPECT_FALSE(std::filesystem::exists(t + "/inv.jsonl"));
}

TEST(Tree, ParallelHashingGivesTheSameBytesAsOneThread) {
  TempDir dir;
  const std::string t = dir / "t";
  make_dir(t);
  uint32_t x = 7;
  for (int d = 0; d < 10; ++d) {
    const std::string sub = t + "/d" + std::to_string(d);
    make_dir(sub);
    for (int f = 0; f < 35; ++f) {
      x = x * 1664525u + 1013904223u;
      // Mostly small files, some up to 600 kB (read) and a few up to 2.5 MB (mapped), so that
      // the walker has to help once the queue is full and both read paths run side by side.
      const size_t size = (x >> 8) % (f % 17 == 0 ? 2500000 : f % 7 == 0 ? 600000 : 5000);
      std::string bytes(size, static_cast<char>('a' + f % 26));
      if (size > 0) bytes[size / 2] = static_cast<char>(x);
      make_file(sub + "/f" + std::to_string(f), bytes);
    }
  }
  const std::string one = inventory_of(t, dir / "one.jsonl", 1);
  const std::string four = inventory_of(t, dir / "four.jsonl", 4);
  const std::string dflt = inventory_of(t, dir / "default.jsonl", 0);
  EXPECT_EQ(lines_of(one).size(), 2u + 10u + 350u);
  EXPECT_EQ(one, four);
  EXPECT_EQ(one, dflt);
}

TEST(Tree, ProgressIsReportedAndEndsComplete) {
  TempDir dir;
  const std::string t = small_tree(dir);
  uint64_t last_done = 0, last_total = 0;
  int calls = 0;
  TreeOptions options;
  options.threads = 2;
  options.progress = [&](uint64_t done, uint64_t total) {
    ++calls;
    last_done = done;
    last_total = total;
  };
  auto summary = tree_digest(t, options);
  ASSERT_TRUE(summary.ok()) << summary.error().message();
  EXPECT_GE(calls, 1);
  EXPECT_EQ(last_done, 16u);
  EXPECT_EQ(last_total, 16u);
}

}  // namespace
}  // namespace sealrun
