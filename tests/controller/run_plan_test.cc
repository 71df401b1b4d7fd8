// SPDX-License-Identifier: Apache-2.0
#include "controller/run/run_plan.h"

#include <gtest/gtest.h>
#include <sys/sysmacros.h>

namespace sealrun::run {
namespace {

TEST(RunPlan, RunIdsAreFileNames) {
  for (const char* good : {"a", "build-42", "x.y_z", "A1"})
    EXPECT_TRUE(validate_run_id(good).ok()) << good;
  for (const char* bad : {"", ".", "..", "a/b", "a b", "ü", "../x"})
    EXPECT_FALSE(validate_run_id(bad).ok()) << bad;
  EXPECT_FALSE(validate_run_id(std::string(65, 'a')).ok());
}

TEST(RunPlan, LayoutFollowsTheContract) {
  auto l = layout_for("/s", "r1");
  EXPECT_EQ(l.owned_root, "/s/owned/r1");
  EXPECT_EQ(l.results_root, "/s/results/r1");
  EXPECT_EQ(l.receipt_path, "/s/results/r1/receipt.json");
  EXPECT_EQ(l.output_dir, "/s/results/r1/out");
}

TEST(RunPlan, JobEnvironmentIsExactlyTheAdmittedVariablesAndSourceDateEpoch) {
  admission::AdmissionDocument doc;
  doc.source_date_epoch = 1700000000;
  doc.env = {{"LANG", "C"}, {"PATH", "/x/bin"}};
  auto env = job_environment(doc);
  EXPECT_EQ(env.size(), 3u);
  EXPECT_EQ(env["SOURCE_DATE_EPOCH"], "1700000000");
  EXPECT_EQ(env["LANG"], "C");
  EXPECT_EQ(env["PATH"], "/x/bin");  // the admission's own PATH wins
}

TEST(RunPlan, WithoutAnAdmittedPathTheJobGetsTheToolchainsBinThenTheSystems) {
  admission::AdmissionDocument doc;
  doc.toolchain.emplace().mount_path = "/toolchain";
  auto env = job_environment(doc);
  EXPECT_EQ(env["PATH"], "/toolchain/bin:/usr/local/bin:/usr/bin:/bin");
  EXPECT_EQ(env.size(), 2u);
}

// A learned admission without a toolchain: the closure binds host files at their own paths.
TEST(RunPlan, WithoutAToolchainTheJobGetsTheSystemsPath) {
  admission::AdmissionDocument doc;
  doc.host_files.push_back({"/usr/bin/cc", std::string(64, 'a')});
  EXPECT_EQ(job_environment(doc)["PATH"], "/usr/local/bin:/usr/bin:/bin");
}

TEST(RunPlan, CensusGetsEveryAdmittedGuard) {
  admission::Limits l;
  l.owned_max_bytes = 1;
  l.result_max_bytes = 2;
  l.free_min_bytes = 3;
  l.ceiling_bytes = 4;
  l.reserve_bytes = 5;
  l.census_interval_ms = 6;
  auto c = census_config(l, layout_for("/s", "r"), nullptr, 7);
  EXPECT_EQ(c.limits.owned_max_bytes, 1u);
  EXPECT_EQ(c.limits.result_max_bytes, 2u);
  EXPECT_EQ(c.limits.free_min_bytes, 3u);
  EXPECT_EQ(c.limits.ceiling_bytes, 4u);
  EXPECT_EQ(c.limits.reserve_bytes, 5u);
  EXPECT_EQ(c.interval_ms, 6);
  EXPECT_EQ(c.owned_root, "/s/owned/r");
  EXPECT_EQ(c.result_root, "/s/results/r");
  EXPECT_EQ(c.limits.owned_max_inodes, 7u);
  EXPECT_EQ(c.owned_kind, census::OwnedKind::kDirectory);
  EXPECT_EQ(c.free_root, "");

  // A file system of its own: one statfs of that device, the free guard on the state directory's.
  ownedfs::OwnedFs fs;
  fs.device = makedev(7, 3);
  fs.reserved_inodes = 11;
  auto f = census_config(l, layout_for("/s", "r"), &fs, 7);
  EXPECT_EQ(f.owned_kind, census::OwnedKind::kFilesystem);
  EXPECT_EQ(f.owned_dev, makedev(7, 3));
  EXPECT_EQ(f.owned_reserved_inodes, 11u);
  EXPECT_EQ(f.free_root, "/s");
}

}  // namespace
}  // namespace sealrun::run
