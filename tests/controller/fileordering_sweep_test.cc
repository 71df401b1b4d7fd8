// SPDX-License-Identifier: Apache-2.0
// `rebuild --vary fileordering`'s copy of the source (run_fileordering.h): its name carries the
// run id and its controller's pid and start time, and `sealrun sweep` removes, for a dead
// controller's record, exactly the copies that name — not another controller's copy of a run with
// the same id (run ids are unique per state directory, /dev/shm is the host's).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "containment/grant_journal.h"
#include "controller/run/run_fileordering.h"
#include "core/proc.h"
#include "fingerprint/source.h"
#include "tests/support/temp_dir.h"

namespace sealrun {
namespace {

namespace fs = std::filesystem;

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(FileorderingCopy, IsNamedForItsControllerAndSweptForItsDeadRecordOnly) {
  testing::TempDir dir;
  const std::string source = dir / "source";
  fs::create_directories(source + "/sub");
  write(source + "/a.txt", "a\n");
  write(source + "/b.txt", "b\n");
  write(source + "/sub/c.txt", "c\n");
  auto manifest = build_manifest(source);
  ASSERT_TRUE(manifest.ok()) << manifest.error().message();
  const std::string base = dir / "shm";
  fs::create_directories(base);

  auto start = own_starttime();
  ASSERT_TRUE(start.ok());
  const std::string prefix = run::reordered_copy_prefix("r1", ::getpid(), *start);
  std::shared_ptr<void> holder;
  auto copy = run::reordered_copy(source, *manifest, base, prefix, &holder);
  ASSERT_TRUE(copy.ok()) << copy.error().message();
  const std::string top = fs::path(copy->path).parent_path().string();
  EXPECT_EQ(fs::path(top).filename().string().rfind(prefix, 0), 0u) << top;
  EXPECT_TRUE(fs::exists(copy->path + "/sub/c.txt"));

  // Another controller's copy of a run with the same id, and one of another run.
  const std::string other_controller = base + "/" + run::reordered_copy_prefix("r1", 1, "7") + "x";
  const std::string other_run =
      base + "/" + run::reordered_copy_prefix("r2", ::getpid(), *start) + "y";
  fs::create_directories(other_controller + "/source");
  fs::create_directories(other_run + "/source");

  GrantRecord r;
  r.id = "r1";
  r.controller_pid = ::getpid();
  r.controller_start = *start;
  auto steps = run::sweep_reordered_copies(r, base);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_FALSE(steps[0].left) << steps[0].outcome;
  EXPECT_NE(steps[0].what.find(top), std::string::npos) << steps[0].what;
  EXPECT_FALSE(fs::exists(top));
  EXPECT_TRUE(fs::exists(other_controller));
  EXPECT_TRUE(fs::exists(other_run));
  // Nothing more of this run: a second sweep has no step.
  EXPECT_TRUE(run::sweep_reordered_copies(r, base).empty());
  // No tmpfs at the base: nothing to do, nothing reported.
  EXPECT_TRUE(run::sweep_reordered_copies(r, dir / "absent").empty());
}

}  // namespace
}  // namespace sealrun
