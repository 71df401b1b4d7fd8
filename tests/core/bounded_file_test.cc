// SPDX-License-Identifier: Apache-2.0
#include "core/bounded_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/syscall.h"
#include "tests/support/temp_dir.h"

namespace sealrun {
namespace {

using testing::TempDir;
using testing::write_text;

TEST(BoundedFile, ReadsARegularFileWhole) {
  TempDir dir;
  write_text(dir / "a.json", "{\"x\":1}");
  auto r = read_bounded_file(AT_FDCWD, dir / "a.json", 100);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(*r, "{\"x\":1}");
}

TEST(BoundedFile, RefusesOversizeByStat) {
  TempDir dir;
  write_text(dir / "big", std::string(101, 'x'));
  auto r = read_bounded_file(AT_FDCWD, dir / "big", 100);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("over the limit of 100 bytes"), std::string::npos);
}

TEST(BoundedFile, RefusesHugeSparseFileQuicklyWithoutReadingIt) {
  TempDir dir;
  std::string path = dir / "huge";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, 1LL << 30), 0);  // 1 GiB, sparse
  ::close(fd);
  int64_t start = monotonic_ms();
  auto r = read_bounded_file(AT_FDCWD, path, kMiB);
  EXPECT_FALSE(r.ok());
  EXPECT_LT(monotonic_ms() - start, 1000);
}

TEST(BoundedFile, RefusesSymlink) {
  TempDir dir;
  write_text(dir / "real", "x");
  ASSERT_EQ(::symlink((dir / "real").c_str(), (dir / "link").c_str()), 0);
  auto r = read_bounded_file(AT_FDCWD, dir / "link", 100);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("is a symlink"), std::string::npos);
}

TEST(BoundedFile, RefusesFifoWithoutBlocking) {
  TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  auto r = read_bounded_file(AT_FDCWD, dir / "fifo", 100);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("a FIFO"), std::string::npos);
}

TEST(BoundedFile, RefusesDirectoryDeviceAndSocket) {
  TempDir dir;
  EXPECT_FALSE(read_bounded_file(AT_FDCWD, dir.str(), 100).ok());
  auto dev = read_bounded_file(AT_FDCWD, "/dev/zero", 100);
  ASSERT_FALSE(dev.ok());
  EXPECT_NE(dev.error().message().find("character device"), std::string::npos);

  int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un addr {};
  addr.sun_family = AF_UNIX;
  std::string sock = dir / "sock";
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", sock.c_str());
  ASSERT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  auto r = read_bounded_file(AT_FDCWD, sock, 100);
  ::close(s);
  EXPECT_FALSE(r.ok());
}

}  // namespace
}  // namespace sealrun
