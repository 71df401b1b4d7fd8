// SPDX-License-Identifier: Apache-2.0
// sweep_owned_fs(): what a killed controller left is found through its record and removed, each
// step reported; what it cannot prove is this run's is never touched.
#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "containment/ownedfs/loop_device.h"
#include "containment/ownedfs/record.h"
#include "tests/ownedfs/ownedfs_fixture.h"

namespace sealrun::ownedfs::testing {
namespace {

// A pid that is certainly dead: a child that exited and was reaped.
pid_t dead_pid() {
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return pid;
}

// A "controller" in a child process creates the owned file system and is SIGKILLed while it runs:
// the mount, the loop device, the image and the record are left. Sweep finds and removes them all.
TEST_F(OwnedFsTest, AKilledControllersFileSystemIsFoundAndRemovedBySweep) {
  OwnedFsSpec s = spec("killed", 64 << 20, 1000);
  int report[2];
  ASSERT_EQ(::pipe2(report, O_CLOEXEC), 0);
  pid_t controller = ::fork();
  if (controller == 0) {
    auto fs = create_owned_fs(s);
    std::string line = fs ? fs->loop_device : "error: " + fs.error().message();
    (void)!::write(report[1], line.data(), line.size());
    ::close(report[1]);
    ::pause();
    ::_exit(0);
  }
  ::close(report[1]);
  std::string loop;
  char buf[512];
  ssize_t n;
  while ((n = ::read(report[0], buf, sizeof buf)) > 0) loop.append(buf, static_cast<size_t>(n));
  ::close(report[0]);
  ::kill(controller, SIGKILL);
  ::waitpid(controller, nullptr, 0);
  ASSERT_EQ(loop.rfind("/dev/loop", 0), 0u) << loop;
  ASSERT_TRUE(mounted(s.mount_point));
  ASSERT_TRUE(loop_bound(loop));

  auto steps = sweep_owned_fs(state_);
  expect_clean(steps);
  std::string text = describe(steps);
  EXPECT_NE(text.find("unmount " + s.mount_point + ": contents discarded, unmounted"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("loop device " + loop + ": released"), std::string::npos) << text;
  EXPECT_NE(text.find("image killed.img: removed"), std::string::npos) << text;
  EXPECT_NE(text.find("record killed.json: removed"), std::string::npos) << text;
  EXPECT_FALSE(mounted(s.mount_point));
  EXPECT_FALSE(loop_bound(loop));
  EXPECT_FALSE(exists(state_ + "/ownedfs/killed.img"));
  EXPECT_FALSE(exists(state_ + "/ownedfs/killed.json"));
  EXPECT_TRUE(sweep_owned_fs(state_).empty()) << "a second sweep finds nothing";
}

TEST_F(OwnedFsTest, ALiveControllersFileSystemIsNotTouched) {
  auto fs = create_owned_fs(spec("alive", 64 << 20, 1000));
  ASSERT_TRUE(fs.ok()) << fs.error().message();
  auto steps = sweep_owned_fs(state_);
  ASSERT_EQ(steps.size(), 1u) << describe(steps);
  EXPECT_NE(steps[0].outcome.find("is alive: not touched"), std::string::npos);
  EXPECT_TRUE(mounted(fs->mount_point));
  expect_clean(remove_owned_fs(*fs));
}

// Killed after the record and the image, before anything was attached: both go.
TEST_F(OwnedFsTest, AnImageLeftBeforeMountingIsRemoved) {
  std::string mp = make_mount_point("early");
  auto dir = open_ownedfs_dir(state_, true);
  ASSERT_TRUE(dir.ok());
  Record r{"early", dead_pid(), "1", state_ + "/ownedfs/early.img", mp, "", 64 << 20, 1000, "t"};
  ASSERT_TRUE(write_record(dir->get(), r, false, true).ok());
  int img = ::openat(dir->get(), "early.img", O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  ASSERT_GE(img, 0);
  ASSERT_EQ(::ftruncate(img, 64 << 20), 0);
  ::close(img);
  auto steps = sweep_owned_fs(state_);
  expect_clean(steps);
  EXPECT_NE(describe(steps).find("unmount " + mp + ": not mounted"), std::string::npos)
      << describe(steps);
  EXPECT_FALSE(exists(r.image));
  EXPECT_FALSE(exists(state_ + "/ownedfs/early.json"));
}

// Something else mounted at the run's mount point is not the run's: refused and left alone.
TEST_F(OwnedFsTest, AForeignMountIsRefused) {
  std::string mp = make_mount_point("foreign");
  auto dir = open_ownedfs_dir(state_, true);
  ASSERT_TRUE(dir.ok());
  Record r{"foreign", dead_pid(), "1", state_ + "/ownedfs/foreign.img", mp, "",
           64 << 20,  1000,       "t"};
  ASSERT_TRUE(write_record(dir->get(), r, false, true).ok());
  int img = ::openat(dir->get(), "foreign.img", O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  ASSERT_GE(img, 0);
  ::close(img);
  ASSERT_EQ(::mount("tmpfs", mp.c_str(), "tmpfs", 0, "size=1m"), 0);
  auto steps = sweep_owned_fs(state_);
  std::string text = describe(steps);
  ASSERT_FALSE(steps.empty());
  EXPECT_TRUE(steps.back().left) << text;
  EXPECT_NE(text.find("refused: what is mounted there (tmpfs"), std::string::npos) << text;
  EXPECT_TRUE(mounted(mp));
  EXPECT_TRUE(exists(r.image));
  EXPECT_TRUE(exists(state_ + "/ownedfs/foreign.json"));
  ASSERT_EQ(::umount2(mp.c_str(), 0), 0);
}

TEST_F(OwnedFsTest, AnImageWithoutARecordIsReportedNotRemoved) {
  auto dir = open_ownedfs_dir(state_, true);
  ASSERT_TRUE(dir.ok());
  int img = ::openat(dir->get(), "stray.img", O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  ASSERT_GE(img, 0);
  ::close(img);
  auto steps = sweep_owned_fs(state_);
  ASSERT_EQ(steps.size(), 1u) << describe(steps);
  EXPECT_TRUE(steps[0].left);
  EXPECT_NE(steps[0].outcome.find("no record"), std::string::npos);
  EXPECT_TRUE(exists(state_ + "/ownedfs/stray.img"));
}

// The ownedfs record is not fsync'd: after a power failure the image may be there with its record
// missing or torn. For a run whose grant record names it (the caller's proof, durable before the
// image existed), sweep_owned_fs_of_run removes the image and the torn record all the same; for
// any other id, nothing is touched.
TEST_F(OwnedFsTest, AnImageWhoseRecordAPowerFailureTookIsRemovedForItsRun) {
  auto dir = open_ownedfs_dir(state_, true);
  ASSERT_TRUE(dir.ok());
  make_mount_point("lost");
  make_mount_point("torn");
  for (const char* img : {"lost.img", "torn.img"}) {
    int fd = ::openat(dir->get(), img, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, 64 << 20), 0);
    ::close(fd);
  }
  int torn = ::openat(dir->get(), "torn.json", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  ASSERT_GE(torn, 0);  // empty: a record whose data never reached the disk
  ::close(torn);

  EXPECT_TRUE(sweep_owned_fs_of_run(state_, "other").empty());
  auto lost = sweep_owned_fs_of_run(state_, "lost");
  expect_clean(lost);
  std::string text = describe(lost);
  EXPECT_NE(text.find("missing; the run's grant record vouches"), std::string::npos) << text;
  EXPECT_NE(text.find("image lost.img: removed"), std::string::npos) << text;
  EXPECT_FALSE(exists(state_ + "/ownedfs/lost.img"));

  auto gone = sweep_owned_fs_of_run(state_, "torn");
  expect_clean(gone);
  text = describe(gone);
  EXPECT_NE(text.find("unreadable; the run's grant record vouches"), std::string::npos) << text;
  EXPECT_FALSE(exists(state_ + "/ownedfs/torn.img"));
  EXPECT_FALSE(exists(state_ + "/ownedfs/torn.json"));
}

// Without a record, the mount at the run's mount point is still touched only when it is a loop
// device bound to that very image.
TEST_F(OwnedFsTest, WithoutARecordAForeignMountIsStillRefused) {
  std::string mp = make_mount_point("nameless");
  auto dir = open_ownedfs_dir(state_, true);
  ASSERT_TRUE(dir.ok());
  int img = ::openat(dir->get(), "nameless.img", O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  ASSERT_GE(img, 0);
  ::close(img);
  ASSERT_EQ(::mount("tmpfs", mp.c_str(), "tmpfs", 0, "size=1m"), 0);
  auto steps = sweep_owned_fs_of_run(state_, "nameless");
  std::string text = describe(steps);
  ASSERT_FALSE(steps.empty());
  EXPECT_TRUE(steps.back().left) << text;
  EXPECT_NE(text.find("refused: what is mounted there (tmpfs"), std::string::npos) << text;
  EXPECT_TRUE(mounted(mp));
  EXPECT_TRUE(exists(state_ + "/ownedfs/nameless.img"));
  ASSERT_EQ(::umount2(mp.c_str(), 0), 0);
}

// Whether `loop` is bound to `image` (by sysfs's backing file, which names an unlinked image too):
// the device itself may be bound to another process's file a moment after it was released.
bool backed_by(const std::string& loop, const std::string& image) {
  std::string name = loop.substr(loop.rfind('/') + 1);
  return sealrun::testing::read_text("/sys/block/" + name + "/loop/backing_file").rfind(image, 0) ==
         0;
}

// `sweep` used to answer "nothing left behind" while an owned file system whose record was gone
// was still mounted: a mount under STATE/owned and a loop device bound to one of STATE's images
// are found without a record, proven ours by the loop device's backing file, and removed.
TEST_F(OwnedFsTest, AMountWhoseRecordIsGoneIsFoundAndRemovedBySweep) {
  OwnedFsSpec s = spec("recordless", 64 << 20, 1000);
  auto fs = create_owned_fs(s);
  ASSERT_TRUE(fs.ok()) << fs.error().message();
  ASSERT_EQ(::unlink(fs->record_path.c_str()), 0);
  ASSERT_TRUE(mounted(s.mount_point));

  auto steps = sweep_owned_fs(state_);
  expect_clean(steps);
  std::string text = describe(steps);
  EXPECT_NE(text.find("owned file system recordless: no record names it, yet it is mounted"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("unmount " + s.mount_point + ": contents discarded, unmounted"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("loop device " + fs->loop_device + ": released"), std::string::npos) << text;
  EXPECT_FALSE(mounted(s.mount_point));
  EXPECT_FALSE(backed_by(fs->loop_device, fs->image_path));
  EXPECT_FALSE(exists(fs->image_path));
}

// Record and image both gone (the image unlinked while the loop device held it): the loop device's
// backing file, "STATE/ownedfs/<id>.img (deleted)", still names it; a result space's mount point
// goes with it.
TEST_F(OwnedFsTest, AMountWhoseRecordAndImageAreGoneIsFoundAndRemovedBySweep) {
  OwnedFsSpec s = spec("bare+out", 64 << 20, 1000);
  // A result space's mount point holds nothing of its own (run_result_space.cc makes it empty).
  ASSERT_EQ(::unlink((s.mount_point + "/.sealrun-owned").c_str()), 0);
  auto fs = create_owned_fs(s);
  ASSERT_TRUE(fs.ok()) << fs.error().message();
  ASSERT_EQ(::unlink(fs->record_path.c_str()), 0);
  ASSERT_EQ(::unlink(fs->image_path.c_str()), 0);

  auto steps = sweep_owned_fs(state_);
  expect_clean(steps);
  std::string text = describe(steps);
  EXPECT_NE(text.find("unmount " + s.mount_point + ": contents discarded, unmounted"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("loop device " + fs->loop_device + ": released"), std::string::npos) << text;
  EXPECT_FALSE(mounted(s.mount_point));
  EXPECT_FALSE(backed_by(fs->loop_device, fs->image_path));
  EXPECT_FALSE(exists(s.mount_point));
  // Nothing is left to find the second time.
  EXPECT_TRUE(sweep_owned_fs(state_).empty()) << describe(sweep_owned_fs(state_));
}

// Without a record or an image, a mount there that is not on a loop device bound to STATE's image
// is refused and reported, never touched.
TEST_F(OwnedFsTest, ARecordlessForeignMountIsReportedNotTouched) {
  ASSERT_TRUE(open_ownedfs_dir(state_, true).ok());
  std::string mp = make_mount_point("alien");
  ASSERT_EQ(::mount("tmpfs", mp.c_str(), "tmpfs", 0, "size=1m"), 0);
  auto steps = sweep_owned_fs(state_);
  std::string text = describe(steps);
  ASSERT_FALSE(steps.empty());
  EXPECT_TRUE(steps.back().left) << text;
  EXPECT_NE(text.find("refused: no record names it"), std::string::npos) << text;
  EXPECT_TRUE(mounted(mp));
  ASSERT_EQ(::umount2(mp.c_str(), 0), 0);
}

}  // namespace
}  // namespace sealrun::ownedfs::testing
