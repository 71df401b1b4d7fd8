// SPDX-License-Identifier: Apache-2.0
// MapRegion (mapped_hash.h): windows land one after another inside the reserved range and stay
// mapped until the range is full, then one recycle drops them all; a window that cannot fit or
// cannot be mapped leaves the range whole. And a FileHasher with a region maps files from
// kRegionMapThresholdBytes on, with the SIGBUS guard still turning a truncation into an error.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "fingerprint/file_hash.h"
#include "fingerprint/mapped_hash.h"
#include "fingerprint/sha256.h"
#include "tests/support/temp_dir.h"

namespace sealrun {
namespace {

using ::testing::HasSubstr;
using testing::pattern_bytes;
using testing::TempDir;
using testing::write_text;

struct MapsLine {
  uintptr_t begin, end;
  std::string perms, path;
};

std::vector<MapsLine> read_maps() {
  std::ifstream in("/proc/self/maps");
  std::vector<MapsLine> lines;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string range, perms, offset, dev, inode, path;
    fields >> range >> perms >> offset >> dev >> inode;
    std::getline(fields >> std::ws, path);
    const size_t dash = range.find('-');
    lines.push_back({std::stoull(range.substr(0, dash), nullptr, 16),
                     std::stoull(range.substr(dash + 1), nullptr, 16), perms, path});
  }
  return lines;
}

size_t mappings_of(const std::string& path) {
  size_t n = 0;
  for (const auto& l : read_maps()) n += l.path == path ? 1 : 0;
  return n;
}

// Whether every byte of [begin, begin + len) is covered by some mapping: a hole would let an
// unrelated mmap land inside the range.
bool covered(uintptr_t begin, size_t len) {
  uintptr_t at = begin;
  for (const auto& l : read_maps())
    if (l.begin <= at && at < l.end) at = l.end;
  return at >= begin + len;
}

class FileFd {
 public:
  FileFd(const std::string& path, int flags) : fd_(::open(path.c_str(), flags | O_CLOEXEC)) {}
  ~FileFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

TEST(MapRegion, WindowsStayMappedOneAfterAnotherUntilTheRangeIsFullThenAllGoAtOnce) {
  TempDir dir;
  const std::string path = dir / "w.bin";
  constexpr size_t kWindow = 4 * 1024 * 1024;  // 16 fit in the range
  const std::string bytes = pattern_bytes(kWindow, 3);
  write_text(path, bytes);
  FileFd fd(path, O_RDONLY);
  ASSERT_GE(fd.get(), 0);
  MapRegion region;
  ASSERT_TRUE(region.reserved());
  const size_t fit = MapRegion::kBytes / kWindow;
  char* first = nullptr;
  for (size_t i = 0; i < fit; ++i) {
    auto* at = static_cast<char*>(region.map(fd.get(), kWindow, 0));
    ASSERT_NE(at, MAP_FAILED) << std::strerror(errno);
    if (i == 0) first = at;
    EXPECT_EQ(at, first + i * kWindow) << "window " << i << " is not the next part of the range";
    EXPECT_EQ(std::memcmp(at, bytes.data(), 4096), 0);
  }
  EXPECT_EQ(mappings_of(path), fit) << "hashed windows must stay mapped until the range is full";
  // One more does not fit: the range is recycled and the window lands at its start.
  auto* again = static_cast<char*>(region.map(fd.get(), kWindow, 0));
  ASSERT_NE(again, MAP_FAILED) << std::strerror(errno);
  EXPECT_EQ(again, first);
  EXPECT_EQ(std::memcmp(again + kWindow - 4096, bytes.data() + kWindow - 4096, 4096), 0);
  EXPECT_EQ(mappings_of(path), 1u) << "the recycle must drop every earlier window";
  EXPECT_TRUE(covered(reinterpret_cast<uintptr_t>(first), MapRegion::kBytes));
}

TEST(MapRegion, AWindowThatCannotBeMappedLeavesTheRangeWholeAndItsPlaceFree) {
  TempDir dir;
  const std::string path = dir / "f.bin";
  write_text(path, pattern_bytes(64 * 1024, 4));
  MapRegion region;
  ASSERT_TRUE(region.reserved());
  FileFd readable(path, O_RDONLY);
  auto* first = static_cast<char*>(region.map(readable.get(), 64 * 1024, 0));
  ASSERT_NE(first, MAP_FAILED);

  // Too large for the range: refused before anything is touched.
  errno = 0;
  EXPECT_EQ(region.map(readable.get(), MapRegion::kBytes + 4096, 0), MAP_FAILED);
  EXPECT_EQ(errno, ENOMEM);
  // The kernel refuses a read mapping of a write-only descriptor (EACCES) after MAP_FIXED was
  // asked for: the range must be reserved again where the window would have gone.
  FileFd write_only(path, O_WRONLY);
  ASSERT_GE(write_only.get(), 0);
  errno = 0;
  EXPECT_EQ(region.map(write_only.get(), 64 * 1024, 0), MAP_FAILED);
  EXPECT_EQ(errno, EACCES);
  EXPECT_TRUE(covered(reinterpret_cast<uintptr_t>(first), MapRegion::kBytes));
  // And the next window takes the place the failed ones did not use.
  auto* next = static_cast<char*>(region.map(readable.get(), 64 * 1024, 0));
  EXPECT_EQ(next, first + 64 * 1024);
}

TEST(MapRegion, DestroyingTheRegionUnmapsItsWindows) {
  TempDir dir;
  const std::string path = dir / "d.bin";
  write_text(path, pattern_bytes(128 * 1024, 5));
  {
    FileFd fd(path, O_RDONLY);
    MapRegion region;
    ASSERT_NE(region.map(fd.get(), 128 * 1024, 0), MAP_FAILED);
    ASSERT_EQ(mappings_of(path), 1u);
  }
  EXPECT_EQ(mappings_of(path), 0u) << "a window outlived its region (and kept its file open)";
}

// A tree's hasher (FileHasher with a region) maps files from kRegionMapThresholdBytes on, and
// reads smaller ones; both give the bytes' digest.
TEST(FileHasherWithRegion, MapsFilesFromTheRegionThresholdAndReadsSmallerOnes) {
  TempDir dir;
  FileHasher hasher(/*map_region=*/true);
  ASSERT_EQ(hasher.map_threshold(), FileHasher::kRegionMapThresholdBytes);
  ASSERT_LT(FileHasher::kRegionMapThresholdBytes, FileHasher::kMapThresholdBytes);
  for (size_t size : {FileHasher::kRegionMapThresholdBytes - 1,
                      FileHasher::kRegionMapThresholdBytes, 3 * FileHasher::kChunkBytes + 17}) {
    const std::string path = dir / ("f" + std::to_string(size));
    const std::string bytes = pattern_bytes(size, static_cast<uint32_t>(size));
    write_text(path, bytes);
    auto opened = open_regular_at(AT_FDCWD, path, path);
    ASSERT_TRUE(opened.ok()) << opened.error().message();
    auto digest = hasher.hash_opened(*opened, path);
    ASSERT_TRUE(digest.ok()) << digest.error().message();
    EXPECT_EQ(digest->sha256, sha256_hex(bytes)) << size;
    EXPECT_EQ(mappings_of(path), size >= FileHasher::kRegionMapThresholdBytes ? 1u : 0u) << size;
  }
  EXPECT_EQ(FileHasher().map_threshold(), FileHasher::kMapThresholdBytes);
}

TEST(FileHasherWithRegion, TruncationWhileAWindowInTheRegionIsReadIsAnErrorNotACrash) {
  TempDir dir;
  const std::string path = dir / "shrinking.bin";
  write_text(path, pattern_bytes(3 * FileHasher::kChunkBytes, 6));
  FileHasher hasher(/*map_region=*/true);
  auto opened = open_regular_at(AT_FDCWD, path, path);
  ASSERT_TRUE(opened.ok()) << opened.error().message();
  auto digest =
      hasher.hash_opened(*opened, path, [&] { ASSERT_EQ(::truncate(path.c_str(), 4096), 0); });
  ASSERT_FALSE(digest.ok());
  EXPECT_THAT(digest.error().message(), HasSubstr("became shorter while it was being hashed"));
  // The hasher is still good for the next file.
  const std::string next = dir / "next.bin";
  const std::string bytes = pattern_bytes(2 * FileHasher::kChunkBytes, 7);
  write_text(next, bytes);
  auto again = open_regular_at(AT_FDCWD, next, next);
  ASSERT_TRUE(again.ok());
  auto good = hasher.hash_opened(*again, next);
  ASSERT_TRUE(good.ok()) << good.error().message();
  EXPECT_EQ(good->sha256, sha256_hex(bytes));
}

}  // namespace
}  // namespace sealrun
