// SPDX-License-Identifier: Apache-2.0
// Unit tests of learn/closure_carry.h (`admit freeze --closure-from`): which entries of another
// admission's closure a new admission keeps (table-driven: pinned places win), what look_again()
// finds on a temporary tree (a changed link target read again, vanished entries named), and the
// comparison that names what changed.
#include "learn/closure_carry.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "fingerprint/sha256.h"
#include "tests/support/temp_dir.h"

namespace sealrun::learn {
namespace {

namespace fs = std::filesystem;
using sealrun::testing::TempDir;
using sealrun::testing::write_text;

const std::string kA(64, 'a');
const std::string kB(64, 'b');

admission::AdmissionDocument closure_doc() {
  admission::AdmissionDocument d;
  d.host_files = {{"/opt/tc/bin/cc", kA},
                  {"/usr/bin/make", kA},
                  {"/usr/lib/gcc/x86_64-linux-gnu/12/cc1", kA},
                  {"/usr/lib/x86_64-linux-gnu/libc.so.6", kA},
                  {"/usr/local/bin/tool", kA}};
  d.host_links = {{"/bin", "usr/bin"}, {"/usr/lib/gcc", "gcc-real"}, {"/usr/bin/cc", "gcc"}};
  d.host_dirs = {"/usr/include", "/usr/lib/gcc/x86_64-linux-gnu/12/include"};
  return d;
}

struct CarryCase {
  const char* name;
  std::vector<std::string> places;
  std::vector<std::string> files;  // kept
  std::vector<std::string> links;  // kept
  std::vector<std::string> dirs;   // kept
  size_t dropped;
};

class CarryTest : public ::testing::TestWithParam<CarryCase> {};

TEST_P(CarryTest, KeepsWhatNoPinnedPlaceCovers) {
  const CarryCase& c = GetParam();
  CarriedClosure carried = carry_closure(closure_doc(), c.places);
  std::vector<std::string> files, links;
  for (const auto& f : carried.files) files.push_back(f.path);
  for (const auto& l : carried.links) links.push_back(l.path);
  EXPECT_EQ(files, c.files);
  EXPECT_EQ(links, c.links);
  EXPECT_EQ(carried.dirs, c.dirs);
  EXPECT_EQ(carried.dropped, c.dropped);
}

const CarryCase kCarryCases[] = {
    {"nothing_pinned",
     {"/src", "/out"},
     {"/opt/tc/bin/cc", "/usr/bin/make", "/usr/lib/gcc/x86_64-linux-gnu/12/cc1",
      "/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/local/bin/tool"},
     {"/bin", "/usr/bin/cc", "/usr/lib/gcc"},
     {"/usr/include", "/usr/lib/gcc/x86_64-linux-gnu/12/include"},
     0},
    // A toolchain mounted at /opt/tc: the closure's file there is the toolchain's now.
    {"toolchain_mount",
     {"/opt/tc"},
     {"/usr/bin/make", "/usr/lib/gcc/x86_64-linux-gnu/12/cc1",
      "/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/local/bin/tool"},
     {"/bin", "/usr/bin/cc", "/usr/lib/gcc"},
     {"/usr/include", "/usr/lib/gcc/x86_64-linux-gnu/12/include"},
     1},
    // A tree at /usr/lib/gcc: the files and the listed directory under it, and the link at its
    // very path, go; /usr/lib/x86_64-linux-gnu is beside it and stays.
    {"tree_over_a_link_and_files",
     {"/usr/lib/gcc"},
     {"/opt/tc/bin/cc", "/usr/bin/make", "/usr/lib/x86_64-linux-gnu/libc.so.6",
      "/usr/local/bin/tool"},
     {"/bin", "/usr/bin/cc"},
     {"/usr/include"},
     3},
    // A tree below a link's path: the link would be the way into it, so it goes too.
    {"tree_below_a_link",
     {"/bin/extra"},
     {"/opt/tc/bin/cc", "/usr/bin/make", "/usr/lib/gcc/x86_64-linux-gnu/12/cc1",
      "/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/local/bin/tool"},
     {"/usr/bin/cc", "/usr/lib/gcc"},
     {"/usr/include", "/usr/lib/gcc/x86_64-linux-gnu/12/include"},
     1},
    // /usr pinned whole: everything under it goes, by component (/usr/local is under /usr).
    {"usr_whole", {"/usr"}, {"/opt/tc/bin/cc"}, {"/bin"}, {}, 8},
    // By component, not by prefix: /usr/lo is not /usr/local.
    {"prefix_is_not_a_parent",
     {"/usr/lo", "/opt/t"},
     {"/opt/tc/bin/cc", "/usr/bin/make", "/usr/lib/gcc/x86_64-linux-gnu/12/cc1",
      "/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/local/bin/tool"},
     {"/bin", "/usr/bin/cc", "/usr/lib/gcc"},
     {"/usr/include", "/usr/lib/gcc/x86_64-linux-gnu/12/include"},
     0},
};

INSTANTIATE_TEST_SUITE_P(Table, CarryTest, ::testing::ValuesIn(kCarryCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(PinnedPlacesTest, MountsToolchainAndTreesButNotHostTools) {
  admission::AdmissionDocument d;
  d.toolchain = admission::ToolchainPin{"/opt/gcc", kA, "/opt/toolchain"};
  d.trees = {{"/srv/data", "/data", kA}};
  d.host_tools = {{"/usr/bin/bwrap", kA}};
  auto places = pinned_places(d);
  for (const char* p :
       {"/src", "/out", "/scratch", "/tmp", "/proc", "/dev", "/opt/toolchain", "/data"})
    EXPECT_NE(std::find(places.begin(), places.end(), p), places.end()) << p;
  EXPECT_EQ(std::find(places.begin(), places.end(), "/usr/bin/bwrap"), places.end())
      << "a host tool is verified, not bound: the closure still shows it to the job";
  EXPECT_EQ(std::find(places.begin(), places.end(), "/opt/gcc"), places.end())
      << "the toolchain's host path is not a place in the job";
  d.toolchain.reset();
  EXPECT_EQ(pinned_places(d).size(), 7u);
}

TEST(ChangedSinceTest, NamesFilesWhoseBytesAndLinksWhoseTargetsDiffer) {
  CarriedClosure before;
  before.files = {{"/a", kA}, {"/b", kA}, {"/c", kB}};
  before.links = {{"/l1", "x"}, {"/l2", "y"}};
  PinnedClosure now;
  now.files = {{"/a", kA, 1}, {"/b", kB, 1}, {"/c", kB, 1}};
  now.links = {{"/l1", "x"}, {"/l2", "z"}};
  EXPECT_EQ(changed_since(before, now), (std::vector<std::string>{"/b", "/l2"}));
  now.files[1].sha256 = kA;
  now.links[1].target = "y";
  EXPECT_TRUE(changed_since(before, now).empty());
}

class LookAgainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    write_text(dir_ / "f", "bytes");
    fs::create_directory(dir_ / "d");
    fs::create_symlink("f", dir_ / "l");
    carried_.files = {{dir_ / "f", kA}};
    carried_.links = {{dir_ / "l", "f"}};
    carried_.dirs = {dir_ / "d"};
  }
  TempDir dir_;
  CarriedClosure carried_;
};

TEST_F(LookAgainTest, ReadsEachLinkAgain) {
  fs::remove(dir_ / "l");
  fs::create_symlink("elsewhere", dir_ / "l");
  auto now = look_again(carried_);
  ASSERT_TRUE(now.ok()) << now.error().message();
  EXPECT_EQ(now->files, std::vector<std::string>{dir_ / "f"});
  ASSERT_EQ(now->links.size(), 1u);
  EXPECT_EQ(now->links[0].target, "elsewhere");
  EXPECT_EQ(now->dirs, std::vector<std::string>{dir_ / "d"});
}

TEST_F(LookAgainTest, NamesEveryEntryThatVanishedOrChangedKind) {
  fs::remove(dir_ / "f");
  fs::remove(dir_ / "l");
  write_text(dir_ / "l", "now a file");
  fs::remove(dir_ / "d");
  auto now = look_again(carried_);
  ASSERT_FALSE(now.ok());
  std::string m = now.error().message();
  EXPECT_NE(m.find("3 entries"), std::string::npos) << m;
  EXPECT_NE(m.find(dir_ / "f" + " vanished"), std::string::npos) << m;
  EXPECT_NE(m.find("link " + dir_ / "l" + " is no longer a symbolic link"), std::string::npos) << m;
  EXPECT_NE(m.find("directory " + dir_ / "d" + " vanished"), std::string::npos) << m;
}

TEST_F(LookAgainTest, AFileThatIsNowADirectoryIsNamed) {
  fs::remove(dir_ / "f");
  fs::create_directory(dir_ / "f");
  auto now = look_again(carried_);
  ASSERT_FALSE(now.ok());
  EXPECT_NE(now.error().message().find(dir_ / "f" + " is no longer a regular file"),
            std::string::npos)
      << now.error().message();
}

// Hashing the carried closure again (closure_pins.h) and comparing names the one changed file.
TEST_F(LookAgainTest, RepinnedClosureNamesTheFileWhoseBytesChanged) {
  carried_.files = {{dir_ / "f", sha256_hex("bytes")}};
  write_text(dir_ / "g", "other");
  carried_.files.push_back({dir_ / "g", sha256_hex("other")});
  write_text(dir_ / "g", "edited");
  auto now = look_again(carried_);
  ASSERT_TRUE(now.ok()) << now.error().message();
  auto pinned = pin_closure(*now, 1 << 20);
  ASSERT_TRUE(pinned.ok()) << pinned.error().message();
  EXPECT_EQ(changed_since(carried_, *pinned), std::vector<std::string>{dir_ / "g"});
}

}  // namespace
}  // namespace sealrun::learn
