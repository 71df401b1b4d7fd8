// SPDX-License-Identifier: Apache-2.0
// lookup_in_view() (containment/view_lookup.h) over a planned view of real host files: mounts read
// through, link entries and the host's own symlinks followed within the view (an absolute one from
// the view's root), closure files and directories as they are, what lies under tmp or a writable
// place unknown, and certain absences missing.
#include "containment/view_lookup.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/temp_dir.h"

namespace sealrun {
namespace {

namespace fs = std::filesystem;
using Found = ViewLookup::Found;

class ViewLookupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    h_ = dir_.str();
    fs::create_directories(h_ + "/usr/bin");
    fs::create_directories(h_ + "/usr/lib/x86_64");
    fs::create_directories(h_ + "/usr/lib64");
    fs::create_directories(h_ + "/data");
    sealrun::testing::write_text(h_ + "/usr/bin/tool", "tool");
    sealrun::testing::write_text(h_ + "/usr/lib/x86_64/ld.so", "loader");
    sealrun::testing::write_text(h_ + "/cache", "cache");
    fs::create_symlink("/lib/x86_64/ld.so", h_ + "/usr/lib64/ld.so");  // absolute: view's root
    fs::create_symlink("tool", h_ + "/usr/bin/alias");
    fs::create_symlink("loop", h_ + "/usr/bin/loop");
    fs::create_symlink("../lib/x86_64/ld.so", h_ + "/usr/bin/up");
    view_ = {
        entry("/tmp", ViewKind::kTmp, ""),
        entry("/usr", ViewKind::kTree, h_ + "/usr"),
        entry("/out", ViewKind::kOut, h_ + "/data", true),
        entry("/opt/deep/tree", ViewKind::kTree, h_ + "/data"),
        entry("/etc/ld.so.cache", ViewKind::kClosure, h_ + "/cache"),
        entry("/var", ViewKind::kDir, ""),
        link("/lib64", "usr/lib64"),
        link("/lib", "usr/lib"),
    };
  }
  static ViewEntry entry(const std::string& job, ViewKind kind, const std::string& host,
                         bool writable = false) {
    ViewEntry e;
    e.job_path = job;
    e.kind = kind;
    e.host_path = host;
    e.writable = writable;
    return e;
  }
  static ViewEntry link(const std::string& job, const std::string& target) {
    ViewEntry e = entry(job, ViewKind::kLink, "");
    e.link_target = target;
    return e;
  }
  sealrun::testing::TempDir dir_;
  std::string h_;
  std::vector<ViewEntry> view_;
};

TEST_F(ViewLookupTest, ResolvesAsTheJobsKernelWould) {
  struct Case {
    std::string path;
    Found found;
    std::string job_path, host_rel;  // host_rel: below the host dir, for kFile
  };
  const std::vector<Case> cases = {
      {"/usr/bin/tool", Found::kFile, "/usr/bin/tool", "/usr/bin/tool"},
      {"/usr/bin/alias", Found::kFile, "/usr/bin/tool", "/usr/bin/tool"},
      {"/lib64/ld.so", Found::kFile, "/usr/lib/x86_64/ld.so", "/usr/lib/x86_64/ld.so"},
      {"/usr/bin/up", Found::kFile, "/usr/lib/x86_64/ld.so", "/usr/lib/x86_64/ld.so"},
      {"/usr/./bin/../bin/tool", Found::kFile, "/usr/bin/tool", "/usr/bin/tool"},
      {"/etc/ld.so.cache", Found::kFile, "/etc/ld.so.cache", "/cache"},
      {"/lib64/ld-linux-x86-64.so.2", Found::kMissing, "", ""},
      {"/bin/sh", Found::kMissing, "", ""},
      {"/usr/bin/tool/below", Found::kMissing, "", ""},
      {"/var/anything", Found::kMissing, "", ""},
      {"/etc/passwd", Found::kMissing, "", ""},
      {"/tmp/x", Found::kUnknown, "", ""},
      {"/out/x", Found::kUnknown, "", ""},
      {"/usr/bin/loop", Found::kUnknown, "", ""},
      {"/opt/deep", Found::kDirectory, "/opt/deep", ""},
      {"/var", Found::kDirectory, "/var", ""},
      {"/lib64", Found::kDirectory, "/usr/lib64", ""},
  };
  for (const Case& c : cases) {
    ViewLookup l = lookup_in_view(view_, c.path);
    EXPECT_EQ(l.found, c.found) << c.path;
    if (c.found == Found::kFile) {
      EXPECT_EQ(l.job_path, c.job_path) << c.path;
      EXPECT_EQ(l.host_path, h_ + c.host_rel) << c.path;
    } else if (c.found == Found::kDirectory) {
      EXPECT_EQ(l.job_path, c.job_path) << c.path;
    }
  }
}

TEST_F(ViewLookupTest, ALaterEntryCoversAnEarlierOne) {
  // A link entry at /usr/lib64 placed after the /usr mount wins over the host's directory.
  view_.push_back(link("/usr/lib64", "/nowhere"));
  EXPECT_EQ(lookup_in_view(view_, "/lib64/ld.so").found, Found::kMissing);
}

}  // namespace
}  // namespace sealrun
