// SPDX-License-Identifier: Apache-2.0
// The owned file system's template (containment/ownedfs/template.h) for real: the first file system
// of a shape is made by mkfs.ext4 and its fresh image kept as the template; the next one of that
// shape is written from the template, is a working, empty ext4 (nothing of the first run's files),
// and still holds exactly its limits; a corrupt template is ignored (mkfs runs, the template is
// written again); another shape gets its own; an interrupted template write is removed by sweep.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "containment/ownedfs/template.h"
#include "tests/ownedfs/ownedfs_fixture.h"

namespace sealrun::ownedfs::testing {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> template_files(const std::string& state, const std::string& ext) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(state + "/ownedfs/templates", ec))
    if (e.path().extension() == ext) out.push_back(e.path().string());
  return out;
}

TEST_F(OwnedFsTest, TheSecondFileSystemOfAShapeComesFromTheTemplateEmpty) {
  auto a = create_owned_fs(spec("a", 64 << 20, 1000));
  ASSERT_TRUE(a.ok()) << a.error().message();
  EXPECT_EQ(a->made_by.rfind("mkfs.ext4", 0), 0u) << a->made_by;
  EXPECT_NE(a->made_by.find("saved as template"), std::string::npos) << a->made_by;
  std::ofstream(a->mount_point + "/secret") << "the first run's data\n";
  struct statfs first {};
  ASSERT_EQ(::statfs(a->mount_point.c_str(), &first), 0);
  expect_clean(remove_owned_fs(*a));

  struct stat dir {};
  ASSERT_EQ(::stat((state_ + "/ownedfs/templates").c_str(), &dir), 0);
  EXPECT_EQ(dir.st_mode & 07777, 0700u);
  auto records = template_files(state_, ".json");
  ASSERT_EQ(records.size(), 1u);
  struct stat rec {};
  ASSERT_EQ(::stat(records[0].c_str(), &rec), 0);
  EXPECT_EQ(rec.st_mode & 07777, 0600u);

  auto b = create_owned_fs(spec("b", 64 << 20, 1000));
  ASSERT_TRUE(b.ok()) << b.error().message();
  EXPECT_EQ(b->made_by.rfind("template ", 0), 0u) << b->made_by;
  EXPECT_FALSE(exists(b->mount_point + "/secret"));
  EXPECT_TRUE(exists(b->mount_point + "/lost+found"));
  EXPECT_TRUE(exists(b->mount_point + "/.sealrun-owned"));
  // The same limits as a file system mkfs made: the size, and the inodes the owned space holds.
  struct statfs sf {};
  ASSERT_EQ(::statfs(b->mount_point.c_str(), &sf), 0);
  EXPECT_EQ(sf.f_files - b->reserved_inodes, 1000u);
  EXPECT_EQ(sf.f_files, first.f_files);
  EXPECT_EQ(sf.f_blocks, first.f_blocks);
  EXPECT_EQ(b->reserved_inodes, a->reserved_inodes);
  // It works: a file written and read back.
  std::string data(1 << 20, 'x');
  std::ofstream(b->mount_point + "/data", std::ios::binary) << data;
  ::sync();
  {
    std::ifstream in(b->mount_point + "/data", std::ios::binary);
    std::string back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(back, data);
  }  // closed: an open file would keep the file system busy
  expect_clean(remove_owned_fs(*b));
}

TEST_F(OwnedFsTest, ACorruptTemplateIsIgnoredAndMadeAgain) {
  auto a = create_owned_fs(spec("a", 64 << 20, 1000));
  ASSERT_TRUE(a.ok()) << a.error().message();
  expect_clean(remove_owned_fs(*a));
  auto data = template_files(state_, ".data");
  ASSERT_EQ(data.size(), 1u);
  {
    std::fstream f(data[0], std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(1024 + 0x38);  // the superblock's magic
    f.put('\x00');
  }
  auto b = create_owned_fs(spec("b", 64 << 20, 1000));
  ASSERT_TRUE(b.ok()) << b.error().message();
  EXPECT_EQ(b->made_by.rfind("mkfs.ext4", 0), 0u) << b->made_by;
  EXPECT_NE(b->made_by.find("corrupt"), std::string::npos) << b->made_by;
  expect_clean(remove_owned_fs(*b));
  auto c = create_owned_fs(spec("c", 64 << 20, 1000));
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->made_by.rfind("template ", 0), 0u) << c->made_by;
  expect_clean(remove_owned_fs(*c));
}

TEST_F(OwnedFsTest, AnotherShapeIsNotMadeFromThisShapesTemplate) {
  auto a = create_owned_fs(spec("a", 64 << 20, 1000));
  ASSERT_TRUE(a.ok()) << a.error().message();
  expect_clean(remove_owned_fs(*a));
  auto b = create_owned_fs(spec("b", 64 << 20, 2000));  // other inodes
  ASSERT_TRUE(b.ok()) << b.error().message();
  EXPECT_EQ(b->made_by.rfind("mkfs.ext4", 0), 0u) << b->made_by;
  expect_clean(remove_owned_fs(*b));
  auto c = create_owned_fs(spec("c", 128 << 20, 1000));  // other size
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->made_by.rfind("mkfs.ext4", 0), 0u) << c->made_by;
  expect_clean(remove_owned_fs(*c));
  EXPECT_EQ(template_files(state_, ".json").size(), 3u);
}

TEST_F(OwnedFsTest, AnInterruptedTemplateWriteIsRemovedBySweep) {
  auto a = create_owned_fs(spec("a", 64 << 20, 1000));
  ASSERT_TRUE(a.ok()) << a.error().message();
  expect_clean(remove_owned_fs(*a));
  // What a controller killed inside write_file_atomic leaves: a temporary named after a dead pid
  // (pid_max is at most 2^22, so this pid cannot be alive), and one of a live process (ours).
  std::string dead = state_ + "/ownedfs/templates/.k.data.tmp-99999999-0000abcd";
  std::string live =
      state_ + "/ownedfs/templates/.k.data.tmp-" + std::to_string(::getpid()) + "-0000abcd";
  std::ofstream(dead) << "partial";
  std::ofstream(live) << "partial";
  auto steps = sweep_owned_fs(state_);
  EXPECT_FALSE(exists(dead)) << describe(steps);
  EXPECT_TRUE(exists(live)) << describe(steps);
  EXPECT_EQ(template_files(state_, ".json").size(), 1u);  // the template itself stays
}

}  // namespace
}  // namespace sealrun::ownedfs::testing
