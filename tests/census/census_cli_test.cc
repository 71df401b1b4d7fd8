// SPDX-License-Identifier: Apache-2.0
// `sealrun census DIR` as a user runs it: the built binary's summary, here for a tree the user
// cannot read whole. Its figures then count only what was seen, and the summary must say so.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "core/process.h"
#include "tests/support/temp_dir.h"

namespace sealrun {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::TempDir;
using testing::write_text;

Captured census_as_nobody(const std::string& dir) {
  SpawnOptions options;
  options.argv = {SEALRUN_BINARY_DIR "/sealrun", "census", dir};
  if (::geteuid() == 0) {  // root reads every directory: walk as nobody
    options.uid = 65534;
    options.gid = 65534;
  }
  auto result = run_capture(options, 60000);
  EXPECT_TRUE(result.ok()) << result.error().message();
  return result.ok() ? std::move(result).value() : Captured{};
}

TEST(CensusCli, ASummaryOfATreeNotReadWholeSaysItsFiguresAreLowerBounds) {
  TempDir dir;
  ::chmod(dir.str().c_str(), 0755);
  const std::string tree = dir / "tree";
  std::filesystem::create_directories(tree + "/locked");
  write_text(tree + "/plain", "p");
  write_text(tree + "/locked/secret", std::string(5000, 's'));
  ::chmod(tree.c_str(), 0755);
  ::chmod((tree + "/plain").c_str(), 0644);

  Captured whole = census_as_nobody(tree);
  EXPECT_EQ(whole.status.code, 0) << whole.err;
  EXPECT_THAT(whole.out, Not(HasSubstr("lower bounds"))) << whole.out;

  ::chmod((tree + "/locked").c_str(), 0);
  Captured part = census_as_nobody(tree);
  ::chmod((tree + "/locked").c_str(), 0755);
  EXPECT_EQ(part.status.code, 0) << part.err;  // an observation was made: exit 0, as documented
  EXPECT_THAT(part.out, HasSubstr("could not be read")) << part.out;
  EXPECT_THAT(part.out, HasSubstr("locked")) << part.out;
  EXPECT_THAT(part.out, HasSubstr("figures are lower bounds")) << part.out;
}

}  // namespace
}  // namespace sealrun
