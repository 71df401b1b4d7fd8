// SPDX-License-Identifier: Apache-2.0
// Unit tests of which entries of a writable source copy are outputs (admission mounts.outputs_from
// "source"): new and changed regular files, never an unchanged input or a link, with hard links
// named after the first path kept.
#include "controller/run/source_outputs.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "tests/support/temp_dir.h"

namespace sealrun::run {
namespace {

using receipt::OutputKind;
using receipt::OutputRecord;

OutputRecord file(const std::string& path, uint64_t size, char digit,
                  const std::string& hardlink_of = "") {
  OutputRecord o;
  o.path = path;
  o.size = size;
  o.sha256 = std::string(64, digit);
  o.hardlink_of = hardlink_of;
  return o;
}

TEST(SourceOutputs, KeepsNewAndChangedFilesOnly) {
  Manifest manifest = {{"a.txt", 5, std::string(64, '1')},
                       {"b.txt", 7, std::string(64, '2')},
                       {"c.txt", 9, std::string(64, '3')}};
  OutputWalk walk;
  walk.outputs.push_back(file("a.txt", 5, '1'));   // unchanged
  walk.outputs.push_back(file("b.txt", 7, '9'));   // same size, other bytes
  walk.outputs.push_back(file("c.txt", 10, '3'));  // other size
  OutputRecord link;
  link.path = "d";
  link.kind = OutputKind::kSymlink;
  link.target = "a.txt";
  walk.outputs.push_back(link);
  walk.outputs.push_back(file("new/e.txt", 3, '4'));
  walk.bytes = 5 + 7 + 10 + 3;
  keep_changed_source_files(walk, manifest);
  ASSERT_EQ(walk.outputs.size(), 3u);
  EXPECT_EQ(walk.outputs[0].path, "b.txt");
  EXPECT_EQ(walk.outputs[1].path, "c.txt");
  EXPECT_EQ(walk.outputs[2].path, "new/e.txt");
  EXPECT_EQ(walk.bytes, 7u + 10u + 3u);
}

TEST(SourceOutputs, HardLinksAreNamedAfterTheFirstPathKept) {
  Manifest manifest = {{"a.txt", 5, std::string(64, '1')}};
  OutputWalk walk;
  walk.outputs.push_back(file("a.txt", 5, '1'));           // the input, unchanged
  walk.outputs.push_back(file("b.txt", 5, '1', "a.txt"));  // a new link to it
  walk.outputs.push_back(file("c.txt", 5, '1', "a.txt"));  // and another
  walk.outputs.push_back(file("d.txt", 2, '7'));           // a new file
  walk.outputs.push_back(file("e.txt", 2, '7', "d.txt"));  // and a link to it
  keep_changed_source_files(walk, manifest);
  ASSERT_EQ(walk.outputs.size(), 4u);
  EXPECT_EQ(walk.outputs[0].path, "b.txt");
  EXPECT_EQ(walk.outputs[0].hardlink_of, "");
  EXPECT_EQ(walk.outputs[1].hardlink_of, "b.txt");
  EXPECT_EQ(walk.outputs[2].hardlink_of, "");
  EXPECT_EQ(walk.outputs[3].hardlink_of, "d.txt");
  EXPECT_EQ(walk.bytes, 5u + 2u);  // each inode once
}

TEST(SourceOutputs, MovesIntoTheOutputDirectoryWithoutReplacingOrFollowing) {
  namespace fs = std::filesystem;
  testing::TempDir dir;
  const std::string state_path = dir / "state";
  ASSERT_EQ(::mkdir(state_path.c_str(), 0755), 0);
  auto state = StateDir::open(state_path);
  ASSERT_TRUE(state.ok()) << state.error().message();
  const std::string copy = state_path + "/exports/x/source", out = state_path + "/results/x/out";
  fs::create_directories(copy + "/deep/er");
  fs::create_directories(out);
  testing::write_text(copy + "/top.txt", "top\n");
  testing::write_text(copy + "/deep/er/f.txt", "f\n");
  OutputWalk walk;
  walk.outputs = {file("deep/er/f.txt", 2, '1'), file("top.txt", 4, '2')};
  auto never = []() -> std::optional<std::string> { return std::nullopt; };
  ASSERT_TRUE(move_source_outputs(*state, copy, out, walk, never).ok());
  EXPECT_EQ(testing::read_text(out + "/deep/er/f.txt"), "f\n");
  EXPECT_EQ(testing::read_text(out + "/top.txt"), "top\n");
  EXPECT_FALSE(fs::exists(copy + "/top.txt"));

  // A path already taken in the output directory is not replaced.
  testing::write_text(copy + "/top.txt", "again\n");
  walk.outputs = {file("top.txt", 6, '3')};
  EXPECT_FALSE(move_source_outputs(*state, copy, out, walk, never).ok());
  EXPECT_EQ(testing::read_text(out + "/top.txt"), "top\n");

  // A directory of the copy swapped for a link is not followed.
  fs::create_directories(dir / "elsewhere");
  testing::write_text(dir / "elsewhere/g.txt", "g\n");
  fs::create_symlink(dir / "elsewhere", copy + "/via");
  walk.outputs = {file("via/g.txt", 2, '4')};
  EXPECT_FALSE(move_source_outputs(*state, copy, out, walk, never).ok());
  EXPECT_TRUE(fs::exists(dir / "elsewhere/g.txt"));
  EXPECT_FALSE(fs::exists(out + "/via"));
}

}  // namespace
}  // namespace sealrun::run
