// The system-call wrappers' own behaviour where they add any: read_link_at gives a link's text
// exactly, up to the longest a link may hold, and names the path when it is not a link.
#include "core/syscall.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <climits>
#include <string>

#include "tests/support/temp_dir.h"

namespace sealrun {
namespace {

TEST(ReadLinkAt, GivesTheTextExactlyAndNamesWhatIsNotALink) {
  testing::TempDir dir;
  for (const std::string target : {"usr/bin", "/etc/alternatives/cc", "../a b\nc", "x"}) {
    const std::string link = dir / "l";
    ::unlink(link.c_str());
    ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
    auto read = read_link_at(AT_FDCWD, link);
    ASSERT_TRUE(read.ok()) << read.error().message();
    EXPECT_EQ(*read, target);
  }
  testing::write_text(dir / "f", "not a link");
  auto file = read_link_at(AT_FDCWD, dir / "f");
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.error().message(), "readlink " + (dir / "f") + ": Invalid argument");
}

TEST(ReadLinkAt, ReadsTheLongestTextALinkMayHoldWhole) {
  testing::TempDir dir;
  const std::string target(PATH_MAX - 1, 'a');  // the longest text a symlink may hold
  const std::string link = dir / "long";
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  auto read = read_link_at(AT_FDCWD, link);
  ASSERT_TRUE(read.ok()) << read.error().message();
  EXPECT_EQ(read->size(), target.size());
}

}  // namespace
}  // namespace sealrun
