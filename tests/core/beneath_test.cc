// SPDX-License-Identifier: Apache-2.0
// Paths resolved beneath a held directory (core/beneath.h): a symlink anywhere on the way, or a
// "..", is refused, so a directory swapped for a link after the holder checked it cannot redirect
// a create, a write or a removal; removal never follows a link and copes with read-only
// directories a job left.
#include "core/beneath.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "core/syscall.h"
#include "tests/support/temp_dir.h"

namespace sealrun {
namespace {

namespace fs = std::filesystem;
using testing::read_text;
using testing::TempDir;
using testing::write_text;

class BeneathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = tmp_ / "root";
    outside_ = tmp_ / "outside";
    fs::create_directories(root_ + "/a/b");
    fs::create_directories(outside_);
    write_text(outside_ + "/secret", "outside\n");
    auto fd = open_at(AT_FDCWD, root_, O_RDONLY | O_DIRECTORY);
    ASSERT_TRUE(fd.ok());
    fd_ = std::move(*fd);
  }
  TempDir tmp_;
  std::string root_, outside_;
  UniqueFd fd_;
};

TEST_F(BeneathTest, OpensAndCreatesBelowTheDirectory) {
  ASSERT_TRUE(make_dir_beneath(fd_.get(), "a/b/c", 0700).ok());
  EXPECT_TRUE(fs::is_directory(root_ + "/a/b/c"));
  EXPECT_TRUE(make_dir_beneath(fd_.get(), "a/b/c", 0700, true).ok());
  EXPECT_FALSE(make_dir_beneath(fd_.get(), "a/b/c", 0700).ok());  // must be new
  ASSERT_TRUE(write_file_atomic_beneath(fd_.get(), "a/b/c/f", "bytes").ok());
  EXPECT_EQ(read_text(root_ + "/a/b/c/f"), "bytes");
  auto dir = open_dir_beneath(fd_.get(), "");
  EXPECT_TRUE(dir.ok());
}

TEST_F(BeneathTest, ADirectorySwappedForALinkRefusesEveryWrite) {
  // What a writer of the parent could do after a check: a/b becomes a link to outside.
  fs::rename(root_ + "/a/b", root_ + "/a/b.real");
  fs::create_directory_symlink(outside_, root_ + "/a/b");
  auto w = write_file_atomic_beneath(fd_.get(), "a/b/receipt.json", "x");
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().err(), ELOOP) << w.error().message();
  EXPECT_NE(w.error().message().find("symlink"), std::string::npos) << w.error().message();
  EXPECT_FALSE(make_dir_beneath(fd_.get(), "a/b/logs", 0755).ok());
  EXPECT_FALSE(open_beneath(fd_.get(), "a/b/new", O_WRONLY | O_CREAT, 0600).ok());
  EXPECT_FALSE(open_beneath(fd_.get(), "a/b/secret", O_RDONLY).ok());
  EXPECT_FALSE(remove_tree_beneath(fd_.get(), "a/b/secret").ok());
  // Nothing landed where the link points, nothing there was touched.
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(outside_)) names.push_back(e.path().filename());
  EXPECT_EQ(names, std::vector<std::string>{"secret"});
  // A link as the last component is refused too, and an existing link is not a directory.
  EXPECT_FALSE(open_beneath(fd_.get(), "a/b", O_RDONLY).ok());
  EXPECT_FALSE(make_dir_beneath(fd_.get(), "a/b", 0755, true).ok());
}

TEST_F(BeneathTest, DotDotAndAbsolutePathsCannotLeave) {
  EXPECT_EQ(open_beneath(fd_.get(), "../outside/secret", O_RDONLY).error().err(), EXDEV);
  EXPECT_FALSE(open_beneath(fd_.get(), outside_ + "/secret", O_RDONLY).ok());
  EXPECT_FALSE(make_dir_beneath(fd_.get(), "..", 0700).ok());
}

TEST_F(BeneathTest, RemoveTreeKeepsWhatLinksPointAtAndRemovesReadOnlyDirectories) {
  fs::create_directories(root_ + "/t/ro/deep");
  write_text(root_ + "/t/ro/deep/file", "x");
  fs::create_directory_symlink(outside_, root_ + "/t/link-to-outside");
  fs::create_symlink(outside_ + "/secret", root_ + "/t/ro/file-link");
  fs::permissions(root_ + "/t/ro/deep", fs::perms::owner_read | fs::perms::owner_exec);
  fs::permissions(root_ + "/t/ro", fs::perms::owner_read | fs::perms::owner_exec);
  ASSERT_TRUE(remove_tree_beneath(fd_.get(), "t").ok());
  EXPECT_FALSE(fs::exists(fs::symlink_status(root_ + "/t")));
  EXPECT_EQ(read_text(outside_ + "/secret"), "outside\n");
  EXPECT_TRUE(remove_tree_beneath(fd_.get(), "t").ok());  // absent: nothing to do
  EXPECT_TRUE(remove_beneath(fd_.get(), "nothing/here").ok());
}

TEST_F(BeneathTest, RemoveTreeStopsAtItsDepthLimit) {
  std::string p = root_ + "/d";
  for (int i = 0; i < 5; ++i) p += "/x";
  fs::create_directories(p);
  auto st = remove_tree_beneath(fd_.get(), "d", 2);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("deeper"), std::string::npos) << st.error().message();
  EXPECT_TRUE(remove_tree_beneath(fd_.get(), "d").ok());
  EXPECT_FALSE(fs::exists(root_ + "/d"));
}

TEST(SplitParent, Table) {
  EXPECT_EQ(split_parent("a"), (std::pair<std::string, std::string>{"", "a"}));
  EXPECT_EQ(split_parent("a/b/c"), (std::pair<std::string, std::string>{"a/b", "c"}));
}

}  // namespace
}  // namespace sealrun
