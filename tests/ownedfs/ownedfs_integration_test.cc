// SPDX-License-Identifier: Apache-2.0
// The owned file system for real (root, loop devices, ext4): made ready for the job, a writer
// stopped by ENOSPC at the byte limit with nothing past it on the host, the inode limit exact, a
// census sample that is one statfs and names "owned space full", the fallback when loop devices are
// missing, and a busy mount handled and reported.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "census/census_thread.h"
#include "census/fs_usage.h"
#include "containment/ownedfs/loop_device.h"
#include "tests/census/walk_helpers.h"
#include "tests/ownedfs/ownedfs_fixture.h"

namespace sealrun::ownedfs::testing {
namespace {

using census::testing::run_unprivileged;

TEST_F(OwnedFsTest, CreatesAMountedFileSystemReadyForTheJob) {
  auto fs = create_owned_fs(spec("ready", 64 << 20, 1000));
  ASSERT_TRUE(fs.ok()) << fs.error().message();
  EXPECT_TRUE(mounted(fs->mount_point));
  EXPECT_TRUE(loop_bound(fs->loop_device));
  EXPECT_EQ(fs->image_path, state_ + "/ownedfs/ready.img");
  EXPECT_TRUE(exists(fs->record_path));
  EXPECT_EQ(fs->size_bytes, 64u << 20);
  // The image is sparse: formatting it cost a sliver of its size on the host.
  struct stat img {};
  ASSERT_EQ(::stat(fs->image_path.c_str(), &img), 0);
  EXPECT_EQ(static_cast<uint64_t>(img.st_size), 64u << 20);
  EXPECT_LT(static_cast<uint64_t>(img.st_blocks) * 512, 8u << 20);
  // The root is the job user's, private; the marker and lost+found root's; nosuid, nodev.
  struct stat root {};
  ASSERT_EQ(::stat(fs->mount_point.c_str(), &root), 0);
  EXPECT_EQ(root.st_uid, kJobUid);
  EXPECT_EQ(root.st_mode & 07777, 0700u);
  EXPECT_EQ(root.st_dev, fs->device);
  struct stat marker {};
  ASSERT_EQ(::stat((fs->mount_point + "/.sealrun-owned").c_str(), &marker), 0);
  EXPECT_EQ(marker.st_uid, 0u);
  EXPECT_EQ(marker.st_mode & 07777, 0600u);
  struct stat lost {};
  ASSERT_EQ(::stat((fs->mount_point + "/lost+found").c_str(), &lost), 0);
  EXPECT_EQ(lost.st_uid, 0u);
  EXPECT_EQ(lost.st_mode & 07777, 0700u);
  struct statvfs v {};
  ASSERT_EQ(::statvfs(fs->mount_point.c_str(), &v), 0);
  EXPECT_TRUE(v.f_flag & ST_NOSUID);
  EXPECT_TRUE(v.f_flag & ST_NODEV);
  // The job user can make its directories and run what it builds there (no noexec).
  std::string out = run_unprivileged([&] {
    std::string d = fs->mount_point + "/scratch";
    if (::mkdir(d.c_str(), 0755) != 0) return std::string("mkdir failed");
    std::filesystem::copy_file("/bin/true", d + "/t");
    ::chmod((d + "/t").c_str(), 0755);
    return std::string(::system((d + "/t").c_str()) == 0 ? "ran" : "did not run");
  });
  EXPECT_EQ(out, "ran");
  // A sample: one statfs; the owned space holds root, marker and scratch/ with its file.
  auto u = census::measure_filesystem(fs->mount_point, fs->device);
  ASSERT_TRUE(u.ok()) << u.error().message();
  EXPECT_EQ(u->used_inodes - fs->reserved_inodes, 4u);
  EXPECT_EQ(u->room_inodes, 1000u - 4u);

  auto steps = remove_owned_fs(*fs);
  expect_clean(steps);
  EXPECT_FALSE(mounted(fs->mount_point));
  EXPECT_FALSE(loop_bound(fs->loop_device)) << describe(steps);
  EXPECT_FALSE(exists(fs->image_path));
  EXPECT_FALSE(exists(fs->record_path));
  EXPECT_TRUE(exists(fs->mount_point + "/.sealrun-owned"));  // the directory's own marker again
}

// ACCEPTANCE 34: a writer past the owned limit meets ENOSPC at the limit, and the host holds no
// byte of it past the limit (the image's allocated size, the only host space the job can reach).
TEST_F(OwnedFsTest, AWriterMeetsEnospcAtTheLimitAndNothingLandsPastIt) {
  constexpr uint64_t kLimit = 64 << 20;
  auto fs = create_owned_fs(spec("full", kLimit, 1000));
  ASSERT_TRUE(fs.ok()) << fs.error().message();
  std::string out = run_unprivileged([&] {
    int fd = ::open((fs->mount_point + "/data").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return std::string("open failed");
    std::string chunk(1 << 20, 'w');
    uint64_t written = 0;
    int err = 0;
    for (int i = 0; i < 1024; ++i) {  // 1 GiB asked for, 16 times the limit
      ssize_t n = ::write(fd, chunk.data(), chunk.size());
      if (n < 0) {
        err = errno;
        break;
      }
      written += static_cast<uint64_t>(n);
    }
    int fa = ::fallocate(fd, 0, 0, 20LL << 30) == 0 ? 0 : errno;  // `fallocate -l 20G`
    ::fsync(fd);
    ::close(fd);
    return std::to_string(err) + "|" + std::to_string(fa) + "|" + std::to_string(written);
  });
  auto parts = std::vector<std::string>();
  for (size_t at = 0, next; at <= out.size(); at = next + 1) {
    next = out.find('|', at);
    if (next == std::string::npos) next = out.size();
    parts.push_back(out.substr(at, next - at));
  }
  ASSERT_EQ(parts.size(), 3u) << out;
  EXPECT_EQ(std::stoi(parts[0]), ENOSPC) << out;
  EXPECT_EQ(std::stoi(parts[1]), ENOSPC) << out;
  uint64_t written = std::stoull(parts[2]);
  EXPECT_LE(written, kLimit);
  EXPECT_GE(written, kLimit * 9 / 10) << "most of the limit is usable";
  int mfd = ::open(fs->mount_point.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(mfd, 0);
  ASSERT_EQ(::syncfs(mfd), 0);  // everything the job wrote is in the image now
  ::close(mfd);
  struct stat img {};
  ASSERT_EQ(::stat(fs->image_path.c_str(), &img), 0);
  EXPECT_LE(static_cast<uint64_t>(img.st_blocks) * 512, kLimit)
      << "bytes past the limit on the host";
  EXPECT_GE(static_cast<uint64_t>(img.st_blocks) * 512, written);

  // The census: one statfs says the space is full, and the owned guard says so with the figure.
  auto u = census::measure_filesystem(fs->mount_point, fs->device);
  ASSERT_TRUE(u.ok());
  EXPECT_LT(u->room_bytes, census::kFullRoomBytes);
  census::Sample s;
  s.owned_bytes = u->used_bytes;
  s.owned_room_bytes = u->room_bytes;
  s.owned_inodes = u->used_inodes - fs->reserved_inodes;
  s.owned_room_inodes = u->room_inodes;
  s.free_bytes = census::kUnbounded;
  census::GuardLimits limits;
  limits.owned_max_bytes = kLimit;
  auto trip = census::evaluate_guards(limits, s);
  ASSERT_TRUE(trip.has_value());
  EXPECT_EQ(trip->name, "owned_max_bytes");
  EXPECT_GE(trip->observed, written);
  EXPECT_NE(trip->describe().find("owned space full"), std::string::npos) << trip->describe();
  expect_clean(remove_owned_fs(*fs));
}

// The inode bound is exact: the owned space (its root and marker included) holds owned_max_inodes
// inodes and the next create fails with ENOSPC, whatever mkfs rounded up to.
TEST_F(OwnedFsTest, TheInodeLimitIsExact) {
  constexpr uint64_t kInodes = 300;
  auto fs = create_owned_fs(spec("inodes", 256 << 20, kInodes));  // 2 block groups: rounding
  ASSERT_TRUE(fs.ok()) << fs.error().message();
  std::string out = run_unprivileged([&] {
    std::string d = fs->mount_point + "/d";
    if (::mkdir(d.c_str(), 0755) != 0) return std::string("mkdir failed");
    int made = 0;
    for (;; ++made) {
      std::string f = d + "/" + std::to_string(made);
      int fd = ::open(f.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      if (fd < 0) return std::to_string(errno) + "|" + std::to_string(made);
      ::close(fd);
    }
  });
  // root + marker + d + the files
  EXPECT_EQ(out, std::to_string(ENOSPC) + "|" + std::to_string(kInodes - 3));
  // The census thread, sampling the file system: the inode guard trips, named, with the figure.
  census::CensusConfig c;
  c.owned_root = fs->mount_point;
  c.owned_kind = census::OwnedKind::kFilesystem;
  c.owned_dev = fs->device;
  c.owned_reserved_inodes = fs->reserved_inodes;
  c.result_root = tmp_.str();
  c.free_root = state_;
  c.limits.owned_max_inodes = kInodes;
  c.limits.free_min_bytes = 0;
  census::CensusThread census(c, nullptr);
  ASSERT_TRUE(census.start().ok());
  census.stop();
  auto trip = census.trip();
  ASSERT_TRUE(trip.has_value());
  EXPECT_EQ(trip->name, "owned_max_inodes");
  EXPECT_EQ(trip->observed, kInodes);
  EXPECT_FALSE(census.census_failure().has_value());
  expect_clean(remove_owned_fs(*fs));
}

// The default inode count is what ext4 allots exactly: no filler inodes, and the room statfs
// reports is the default less the root and the marker.
TEST_F(OwnedFsTest, TheDefaultInodeCountNeedsNoFiller) {
  constexpr uint64_t kSize = 1ULL << 30;
  uint64_t inodes = default_owned_max_inodes(kSize);
  auto fs = create_owned_fs(spec("default", kSize, inodes));
  ASSERT_TRUE(fs.ok()) << fs.error().message();
  EXPECT_FALSE(exists(fs->mount_point + "/.sealrun-spare-inodes"));
  auto u = census::measure_filesystem(fs->mount_point, fs->device);
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->room_inodes, inodes - 2);
  EXPECT_EQ(u->used_inodes - fs->reserved_inodes, 2u);
  expect_clean(remove_owned_fs(*fs));
}

// Where loop devices are unavailable (here: the probe's seam pointed at a /dev without them),
// nothing is made and the reason is given; the owned root stays a plain directory.
TEST_F(OwnedFsTest, WithoutLoopDevicesNothingIsMadeAndTheReasonIsGiven) {
  sealrun::testing::TempDir no_dev;
  OwnedFsSpec s = spec("fallback", 64 << 20, 1000);
  s.host.dev_dir = no_dev.str();
  Availability a = probe_ownedfs(s.host);
  EXPECT_FALSE(a.available);
  EXPECT_NE(a.why.find("loop-control"), std::string::npos) << a.why;
  auto fs = create_owned_fs(s);
  ASSERT_FALSE(fs.ok());
  EXPECT_NE(fs.error().message().find("loop-control"), std::string::npos) << fs.error().message();
  EXPECT_FALSE(mounted(s.mount_point));
  EXPECT_FALSE(exists(state_ + "/ownedfs/fallback.img"));
  EXPECT_FALSE(exists(state_ + "/ownedfs/fallback.json"));
}

// A process with its cwd inside keeps the mount busy: removal names it, detaches lazily as the last
// resort, keeps the image and record; once the process is gone, a second removal finishes (sweep
// does the same for a dead controller: ownedfs_sweep_test).
TEST_F(OwnedFsTest, ABusyMountIsNamedDetachedLazilyAndRemovedOnceReleased) {
  auto fs = create_owned_fs(spec("busy", 64 << 20, 1000));
  ASSERT_TRUE(fs.ok()) << fs.error().message();
  int ready[2];
  ASSERT_EQ(::pipe2(ready, O_CLOEXEC), 0);
  pid_t holder = ::fork();
  if (holder == 0) {
    if (::chdir(fs->mount_point.c_str()) != 0) ::_exit(1);
    (void)!::write(ready[1], "x", 1);
    ::pause();
    ::_exit(0);
  }
  ::close(ready[1]);
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::close(ready[0]);
  auto steps = remove_owned_fs(*fs, 200);
  std::string text = describe(steps);
  ASSERT_GE(steps.size(), 2u) << text;
  EXPECT_TRUE(steps[0].left) << text;
  EXPECT_NE(steps[0].outcome.find("pid " + std::to_string(holder)), std::string::npos) << text;
  EXPECT_NE(steps[0].outcome.find("cwd"), std::string::npos) << text;
  EXPECT_NE(steps[0].outcome.find("lazily"), std::string::npos) << text;
  EXPECT_FALSE(mounted(fs->mount_point));            // detached from the tree...
  EXPECT_TRUE(loop_bound(fs->loop_device)) << text;  // ...but alive while the holder is
  EXPECT_TRUE(exists(fs->image_path));
  EXPECT_TRUE(exists(fs->record_path));

  ::kill(holder, SIGKILL);
  ::waitpid(holder, nullptr, 0);
  // The record names a live controller (this test), so sweep leaves it; the removal is redone.
  steps = remove_owned_fs(*fs);
  expect_clean(steps);
  EXPECT_FALSE(loop_bound(fs->loop_device)) << describe(steps);
  EXPECT_FALSE(exists(fs->image_path));
  EXPECT_FALSE(exists(fs->record_path));
}

}  // namespace
}  // namespace sealrun::ownedfs::testing
