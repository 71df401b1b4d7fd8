// SPDX-License-Identifier: Apache-2.0
// Progress while hashing a tree: the terminal line shows no percentage while the walk is still
// finding files and a percentage that never decreases afterwards, with rate and ETA; the walk
// reports through the callbacks with totals that are final before any percentage can be formed;
// and the re-opening of walked files (beneath the root, nothing followed, paths longer than
// PATH_MAX) that lets the walk run ahead.
#include "fingerprint/hash_progress.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <regex>

#include "core/unique_fd.h"
#include "fingerprint/open_beneath.h"
#include "fingerprint/sha256.h"
#include "fingerprint/tree.h"
#include "tests/support/temp_dir.h"

namespace sealrun {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::TempDir;
using testing::write_text;

TEST(ProgressLine, NoPercentageUntilTheWalkIsComplete) {
  ProgressLine line("toolchain");
  HashProgress p{100, 1 << 20, 10, 1 << 10, 0, false};
  const std::string walking = line.render(p, 0);
  EXPECT_THAT(walking, HasSubstr("hashing toolchain: 1.0 KiB in 10 files"));
  EXPECT_THAT(walking, HasSubstr("finding files: 100 so far"));
  EXPECT_THAT(walking, Not(HasSubstr("%")));
  EXPECT_THAT(walking, Not(HasSubstr("ETA")));
  EXPECT_EQ(line.shown_percent(), -1);

  p.walk_complete = true;
  p.bytes_done = 1 << 19;
  const std::string half = line.render(p, 1000);
  EXPECT_THAT(half, HasSubstr("512.0 KiB of 1.0 MiB (50%), 10 of 100 files"));
  EXPECT_THAT(half, HasSubstr("/s"));  // a rate from two samples a second apart
  EXPECT_THAT(half, HasSubstr("ETA"));
}

TEST(ProgressLine, ThePercentageNeverRunsBackwards) {
  ProgressLine line("tree");
  HashProgress p{10, 1000, 5, 600, 0, true};
  EXPECT_THAT(line.render(p, 0), HasSubstr("(60%)"));
  p.bytes_found = 2000;  // a total that grew (it cannot once the walk is complete, but if it did)
  EXPECT_THAT(line.render(p, 100), HasSubstr("(60%)"));
  p.bytes_done = 1900;
  EXPECT_THAT(line.render(p, 200), HasSubstr("(95%)"));
  p.bytes_done = 2000;
  p.files_done = 10;
  const std::string done = line.render(p, 300);
  EXPECT_THAT(done, HasSubstr("(100%)"));
  EXPECT_THAT(done, Not(HasSubstr("ETA")));
}

TEST(ProgressLine, StatVerifiedFilesAndEmptyTreesAreShown) {
  ProgressLine line("toolchain");
  HashProgress cached{4, 0, 4, 0, 3, true};
  EXPECT_THAT(line.render(cached, 0), HasSubstr("(100%), 4 of 4 files (3 by stat)"));
  EXPECT_EQ(line.render(cached, 0).rfind("verifying toolchain: ", 0), 0u) << "checked, not read";
  EXPECT_EQ(binary_size_text(17), "17 B");
  EXPECT_EQ(binary_size_text(3u << 30), "3.0 GiB");
}

TEST(TreeProgress, TotalsAreFinalBeforeAnyPercentageAndTheLegacyFormNeverShrinks) {
  TempDir dir;
  const std::string t = dir / "t";
  ASSERT_EQ(::mkdir(t.c_str(), 0755), 0);
  uint64_t bytes = 0;
  for (int d = 0; d < 20; ++d) {
    const std::string sub = t + "/d" + std::to_string(d);
    ASSERT_EQ(::mkdir(sub.c_str(), 0755), 0);
    for (int f = 0; f < 20; ++f) {
      const size_t size = f == 0 ? 2u << 20 : 3000u * f;
      write_text(sub + "/f" + std::to_string(f), std::string(size, 'x'));
      bytes += size;
    }
  }
  std::vector<HashProgress> seen;
  std::vector<std::pair<uint64_t, uint64_t>> legacy;
  TreeOptions options;
  options.threads = 2;
  options.on_progress = [&](const HashProgress& p) { seen.push_back(p); };
  options.progress = [&](uint64_t done, uint64_t total) { legacy.emplace_back(done, total); };
  auto summary = tree_digest(t, options);
  ASSERT_TRUE(summary.ok()) << summary.error().message();

  ASSERT_FALSE(seen.empty());
  const HashProgress& last = seen.back();
  EXPECT_TRUE(last.walk_complete);
  EXPECT_EQ(last.files_found, 400u);
  EXPECT_EQ(last.files_done, 400u);
  EXPECT_EQ(last.bytes_found, bytes);
  EXPECT_EQ(last.bytes_done, bytes);
  ProgressLine line("t");
  int64_t ms = 0;
  int shown = -1;
  for (const HashProgress& p : seen) {
    if (p.walk_complete) {
      EXPECT_EQ(p.bytes_found, bytes) << "a percentage is only formed over the final total";
      EXPECT_EQ(p.files_found, 400u);
    }
    line.render(p, ms += 100);
    EXPECT_GE(line.shown_percent(), shown);
    shown = line.shown_percent();
  }
  EXPECT_EQ(shown, 100);

  ASSERT_FALSE(legacy.empty());
  for (size_t i = 0; i < legacy.size(); ++i) {
    EXPECT_EQ(legacy[i].second, bytes) << "the legacy total never changes";
    if (i > 0) {
      EXPECT_GE(legacy[i].first, legacy[i - 1].first);
    }
  }
  EXPECT_EQ(legacy.back().first, bytes);
}

TEST(OpenBeneath, PathsLongerThanPathMaxAreHashed) {
  TempDir dir;
  const std::string t = dir / "t";
  ASSERT_EQ(::mkdir(t.c_str(), 0755), 0);
  UniqueFd at(::open(t.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(at.valid());
  const std::string name(200, 'd');
  std::string rel;
  while (rel.size() < PATH_MAX + 500) {  // deeper than one openat2 can resolve
    ASSERT_EQ(::mkdirat(at.get(), name.c_str(), 0755), 0);
    at.reset(::openat(at.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(at.valid());
    rel += name + "/";
  }
  {
    UniqueFd f(::openat(at.get(), "deep", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
    ASSERT_TRUE(f.valid());
    ASSERT_EQ(::write(f.get(), "deep\n", 5), 5);
  }
  UniqueFd root(::open(t.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  struct stat st {};
  ASSERT_EQ(::fstatat(at.get(), "deep", &st, AT_SYMLINK_NOFOLLOW), 0);
  auto opened = open_regular_beneath(root.get(), rel + "deep", "deep", st.st_dev, st.st_ino);
  ASSERT_TRUE(opened.ok()) << opened.error().message();

  TreeOptions options;
  options.threads = 2;
  auto summary = tree_digest(t, options);
  ASSERT_TRUE(summary.ok()) << summary.error().message();
  EXPECT_EQ(summary->regular_bytes, 5u);
}

// A root t holding real/f ("x"), opened as the walk opens it, and the inode the walk saw of f.
class OpenWalkedFile : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::mkdir(t.c_str(), 0755), 0);
    ASSERT_EQ(::mkdir((t + "/real").c_str(), 0755), 0);
    write_text(t + "/real/f", "x");
    root.reset(::open(t.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(root);
    ASSERT_EQ(::stat((t + "/real/f").c_str(), &st), 0);
  }
  TempDir dir;
  const std::string t = dir / "t";
  UniqueFd root;
  struct stat st {};
};

TEST_F(OpenWalkedFile, ASymlinkOnThePathOrAnotherInodeIsRefused) {
  write_text(t + "/other", "y");
  ASSERT_EQ(::symlink("real", (t + "/alias").c_str()), 0);
  ASSERT_EQ(::symlink("real/f", (t + "/flink").c_str()), 0);

  ASSERT_TRUE(open_regular_beneath(root.get(), "real/f", "real/f", st.st_dev, st.st_ino).ok());
  auto via_dir = open_regular_beneath(root.get(), "alias/f", "alias/f", st.st_dev, st.st_ino);
  ASSERT_FALSE(via_dir.ok());
  EXPECT_THAT(via_dir.error().message(), HasSubstr("symlink"));
  auto via_link = open_regular_beneath(root.get(), "flink", "flink", st.st_dev, st.st_ino);
  ASSERT_FALSE(via_link.ok());
  EXPECT_THAT(via_link.error().message(), HasSubstr("symlink"));
  auto other = open_regular_beneath(root.get(), "other", "other", st.st_dev, st.st_ino);
  ASSERT_FALSE(other.ok());
  EXPECT_THAT(other.error().message(), HasSubstr("was replaced"));
  auto gone = open_regular_beneath(root.get(), "real/nope", "real/nope", st.st_dev, st.st_ino);
  ASSERT_FALSE(gone.ok());
  EXPECT_THAT(gone.error().message(), HasSubstr("did the tree change"));
}

TEST_F(OpenWalkedFile, ErrorsNameTheFileAsTheWalkShowsIt) {
  // The name is joined only when an error is reported (DisplayName): "ROOT/REL", or REL alone
  // when the root is shown as ".".

  const std::string shown_root = "/some/root";
  auto gone = open_regular_beneath(root.get(), "real/nope", DisplayName(shown_root, "real/nope"),
                                   st.st_dev, st.st_ino);
  ASSERT_FALSE(gone.ok());
  EXPECT_THAT(gone.error().message(), HasSubstr("open /some/root/real/nope "));
  auto here = open_regular_beneath(root.get(), "real/nope", DisplayName(".", "real/nope"),
                                   st.st_dev, st.st_ino);
  ASSERT_FALSE(here.ok());
  EXPECT_THAT(here.error().message(), HasSubstr("open real/nope "));
  EXPECT_EQ(DisplayName("/r", "a/b").str(), "/r/a/b");
  EXPECT_EQ(DisplayName(".", "a/b").str(), "a/b");
  EXPECT_EQ(DisplayName(std::string("whole/name")).str(), "whole/name");

  // The raw digest is the hex one's bytes, and a file that grows while it is hashed is still an
  // error naming it as the walk shows it.
  auto file = open_regular_beneath(root.get(), "real/f", "real/f", st.st_dev, st.st_ino);
  ASSERT_TRUE(file.ok()) << file.error().message();
  FileHasher hasher;
  auto raw = hasher.hash_opened_raw(*file, DisplayName(shown_root, "real/f"));
  auto reopened = open_regular_beneath(root.get(), "real/f", "real/f", st.st_dev, st.st_ino);
  ASSERT_TRUE(reopened.ok());
  auto hex = hasher.hash_opened(*reopened, "real/f");
  ASSERT_TRUE(raw.ok() && hex.ok());
  EXPECT_EQ(raw->raw, hex->raw);
  EXPECT_EQ(raw->bytes, 1u);
  EXPECT_EQ(hex->sha256, sha256_hex("x"));
  auto again = open_regular_beneath(root.get(), "real/f", "real/f", st.st_dev, st.st_ino);
  ASSERT_TRUE(again.ok());
  auto grown = hasher.hash_opened_raw(*again, DisplayName(shown_root, "real/f"),
                                      [&] { write_text(t + "/real/f", "xy"); });
  ASSERT_FALSE(grown.ok());
  EXPECT_THAT(grown.error().message(),
              HasSubstr("/some/root/real/f changed while it was being hashed"));
}

}  // namespace
}  // namespace sealrun
