// SPDX-License-Identifier: Apache-2.0
// hash_file_at: correct digests through the descriptor (read and mapped), a file rewritten or
// truncated mid-hash is an error (made deterministic with the AfterFirstChunkHook seam), and
// symlinks, FIFOs and directories are refused without being followed or blocking.
#include "fingerprint/file_hash.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <future>
#include <thread>

#include "fingerprint/mapped_hash.h"
#include "fingerprint/sha256.h"
#include "tests/support/temp_dir.h"

namespace sealrun {
namespace {

using ::testing::HasSubstr;
using testing::pattern_bytes;
using testing::TempDir;
using testing::write_text;

TEST(FileHash, SmallAndMultiChunkFilesMatchTheirBytes) {
  TempDir dir;
  for (size_t size :
       {size_t{0}, size_t{1}, size_t{4096}, FileHasher::kChunkBytes,
        3 * FileHasher::kChunkBytes + 17, FileHasher::kMapThresholdBytes - 1,
        FileHasher::kMapThresholdBytes, kMapWindowBytes, 2 * kMapWindowBytes + 4097}) {
    std::string bytes = pattern_bytes(size, static_cast<uint32_t>(size));
    write_text(dir / "f", bytes);
    auto digest = hash_file(dir / "f");
    ASSERT_TRUE(digest.ok()) << digest.error().message();
    EXPECT_EQ(digest->sha256, sha256_hex(bytes)) << size;
    EXPECT_EQ(digest->bytes, size);
  }
}

TEST(FileHash, RelativeToDirectoryDescriptor) {
  TempDir dir;
  write_text(dir / "x", "abc");
  int dfd = ::open(dir.str().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(dfd, 0);
  auto digest = hash_file_at(dfd, "x");
  ::close(dfd);
  ASSERT_TRUE(digest.ok()) << digest.error().message();
  EXPECT_EQ(digest->sha256, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

// The race checks hold on both ways a file is read: read(2) below FileHasher::kMapThresholdBytes,
// mappings (mapped_hash.h) from there on.
class FileHashRace : public ::testing::TestWithParam<size_t> {};

INSTANTIATE_TEST_SUITE_P(ReadAndMapped, FileHashRace,
                         ::testing::Values(2 * FileHasher::kChunkBytes,
                                           FileHasher::kMapThresholdBytes +
                                               3 * FileHasher::kChunkBytes),
                         [](const auto& info) {
                           return info.param < FileHasher::kMapThresholdBytes ? "Read" : "Mapped";
                         });

TEST_P(FileHashRace, FileGrownDuringHashingIsAnErrorNamingIt) {
  TempDir dir;
  const std::string path = dir / "growing.bin";
  write_text(path, pattern_bytes(GetParam(), 1));
  bool called = false;
  auto digest = hash_file_at(AT_FDCWD, path, [&] {
    called = true;
    int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, "more", 4), 4);
    ::close(fd);
  });
  EXPECT_TRUE(called);
  ASSERT_FALSE(digest.ok());
  EXPECT_THAT(digest.error().message(), HasSubstr(path));
  EXPECT_THAT(digest.error().message(), HasSubstr("changed while it was being hashed"));
}

TEST_P(FileHashRace, SameSizeRewriteDuringHashingIsAnError) {
  // Only the timestamps can tell: the size stays the same. The write happens after our first
  // fstat, which (multigrain timestamps) guarantees it a distinct ctime.
  TempDir dir;
  const std::string path = dir / "rewritten.bin";
  const std::string original = pattern_bytes(GetParam(), 2);
  write_text(path, original);
  auto digest = hash_file_at(AT_FDCWD, path, [&] {
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::pwrite(fd, "XXXX", 4, static_cast<off_t>(original.size() - 4)), 4);
    ::close(fd);
  });
  ASSERT_FALSE(digest.ok()) << "a rewritten file was hashed silently";
  EXPECT_THAT(digest.error().message(), HasSubstr(path));
  EXPECT_THAT(digest.error().message(), HasSubstr("time changed"));
}

TEST_P(FileHashRace, FileTruncatedDuringHashingIsAnErrorNotACrash) {
  // On the mapped path the pages past the new end vanish from the mapping and the next access
  // raises SIGBUS: the guard must turn that into an error for this file, and the process lives.
  TempDir dir;
  const std::string path = dir / "shrinking.bin";
  write_text(path, pattern_bytes(GetParam(), 4));
  auto digest = hash_file_at(AT_FDCWD, path, [&] {
    ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(FileHasher::kChunkBytes)), 0);
  });
  ASSERT_FALSE(digest.ok()) << "a truncated file was hashed silently";
  EXPECT_THAT(digest.error().message(), HasSubstr(path));
  EXPECT_THAT(digest.error().message(),
              ::testing::AnyOf(HasSubstr("became shorter"), HasSubstr("changed while")));
  // The hasher is fine afterwards.
  write_text(dir / "after", "abc");
  auto after = hash_file(dir / "after");
  ASSERT_TRUE(after.ok()) << after.error().message();
  EXPECT_EQ(after->sha256, sha256_hex("abc"));
}

TEST_P(FileHashRace, UnchangedFileWithHookStillHashes) {
  TempDir dir;
  const std::string bytes = pattern_bytes(GetParam(), 3);
  write_text(dir / "f", bytes);
  int calls = 0;
  auto digest = hash_file_at(AT_FDCWD, dir / "f", [&] { ++calls; });
  ASSERT_TRUE(digest.ok()) << digest.error().message();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(digest->sha256, sha256_hex(bytes));
}

TEST(FileHash, MappedWindowsNotInThePageCacheMatchTheirBytes) {
  // A window whose pages are not cached is left to faults and marked MADV_HUGEPAGE (the pages
  // then come in as 2 MiB folios): the digest must be the bytes' all the same, across windows and
  // a tail that is not a whole page. The file's clean pages are evicted first (fsync, then
  // POSIX_FADV_DONTNEED), and the test checks that its last byte really left the cache.
  TempDir dir;
  const std::string path = dir / "cold.bin";
  const std::string bytes = pattern_bytes(kMapWindowBytes + 2 * 1024 * 1024 + 4097, 7);
  write_text(path, bytes);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::fsync(fd), 0);
  ASSERT_EQ(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
  char last = 0;
  struct iovec iov {
    &last, 1
  };
  const ssize_t n = ::preadv2(fd, &iov, 1, static_cast<off_t>(bytes.size() - 1), RWF_NOWAIT);
  const int err = errno;
  ::close(fd);
  ASSERT_EQ(n, -1) << "the last byte is still in the page cache";
  ASSERT_EQ(err, EAGAIN);
  auto digest = hash_file(path);
  ASSERT_TRUE(digest.ok()) << digest.error().message();
  EXPECT_EQ(digest->sha256, sha256_hex(bytes));
  EXPECT_EQ(digest->bytes, bytes.size());
}

TEST(FileHash, MappedTruncationIsReportedAsShrinkage) {
  // Pins down that the mapped path really is taken and really meets the SIGBUS: only it says
  // "became shorter" (the read path sees the new size in its identity check instead).
  TempDir dir;
  const std::string path = dir / "shrinking.bin";
  write_text(path, pattern_bytes(FileHasher::kMapThresholdBytes + 3 * FileHasher::kChunkBytes, 5));
  auto digest = hash_file_at(AT_FDCWD, path, [&] {
    ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(FileHasher::kChunkBytes)), 0);
  });
  ASSERT_FALSE(digest.ok());
  EXPECT_THAT(digest.error().message(), HasSubstr("became shorter while it was being hashed"));
}

TEST(FileHashDeathTest, SigbusOutsideAHashIsStillFatal) {
  // The guard's handler must not swallow a SIGBUS that is not its own: after a mapped hash has
  // installed it, touching a truncated mapping elsewhere still kills the process with SIGBUS.
  TempDir dir;
  const std::string path = dir / "victim.bin";
  write_text(path, pattern_bytes(FileHasher::kMapThresholdBytes + 1, 6));
  EXPECT_EXIT(
      {
        if (!hash_file(path).ok()) std::_Exit(3);  // installs the handler
        int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
        if (fd < 0) std::_Exit(4);
        auto* p =
            static_cast<volatile char*>(::mmap(nullptr, 1 << 16, PROT_READ, MAP_SHARED, fd, 0));
        if (::ftruncate(fd, 0) != 0) std::_Exit(5);
        (void)p[100];
        std::_Exit(0);
      },
      ::testing::KilledBySignal(SIGBUS), "");
}

TEST(FileHash, SymlinkIsRefusedNotFollowed) {
  TempDir dir;
  write_text(dir / "target", "abc");
  ASSERT_EQ(::symlink("target", (dir / "link").c_str()), 0);
  auto digest = hash_file(dir / "link");
  ASSERT_FALSE(digest.ok());
  EXPECT_THAT(digest.error().message(), HasSubstr(dir / "link"));
  EXPECT_THAT(digest.error().message(), HasSubstr("is a symlink"));
}

// Runs fn on a thread and fails (instead of hanging the suite) if it blocks.
template <typename Fn>
auto within_seconds(int seconds, Fn fn) -> std::optional<decltype(fn())> {
  auto task = std::make_shared<std::packaged_task<decltype(fn())()>>(std::move(fn));
  auto result = task->get_future();
  std::thread([task] { (*task)(); }).detach();
  if (result.wait_for(std::chrono::seconds(seconds)) != std::future_status::ready)
    return std::nullopt;
  return result.get();
}

TEST(FileHash, FifoIsRefusedWithoutBlocking) {
  TempDir dir;
  const std::string fifo = dir / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto digest = within_seconds(10, [&] { return hash_file(fifo); });
  ASSERT_TRUE(digest.has_value()) << "hashing a FIFO blocked";
  ASSERT_FALSE(digest->ok());
  EXPECT_THAT(digest->error().message(), HasSubstr(fifo));
  EXPECT_THAT(digest->error().message(), HasSubstr("FIFO"));
}

TEST(FileHash, FifoSwappedInAfterTheLstatIsRefusedWithoutBlocking) {
  // The race the tree walk cannot exclude: its lstat saw a regular file, then the name became a
  // FIFO. O_NONBLOCK makes the open return at once, and fstat tells the truth.
  TempDir dir;
  const std::string fifo = dir / "pipe";
  write_text(dir / "regular", "x");
  struct stat looked {};
  ASSERT_EQ(::stat((dir / "regular").c_str(), &looked), 0);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto opened = within_seconds(10, [&] { return open_regular_at(AT_FDCWD, fifo, fifo, &looked); });
  ASSERT_TRUE(opened.has_value()) << "opening a FIFO blocked";
  ASSERT_FALSE(opened->ok());
  EXPECT_THAT(opened->error().message(), HasSubstr("FIFO"));
}

TEST(FileHash, DirectoryAndMissingFileAreErrorsNamingThePath) {
  TempDir dir;
  auto d = hash_file(dir.str());
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.error().message(), HasSubstr("is a directory"));
  auto missing = hash_file(dir / "nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.error().message(), HasSubstr(dir / "nope"));
  EXPECT_EQ(missing.error().err(), ENOENT);
}

}  // namespace
}  // namespace sealrun
