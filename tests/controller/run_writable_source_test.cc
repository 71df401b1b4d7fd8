// `sealrun run` with a writable source (admission mounts.source_writable and
// mounts.outputs_from "source"): the job changes and adds files in /src — the run's private,
// verified copy of the source, never the host's tree — and exactly the new and changed files
// become the outputs, moved to results/<id>/out.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/controller/run_test_support.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST_F(RunTest, WritableSourceOutputsAreTheNewAndChangedFiles) {
  write_text(src_ + "/kept.txt", "left alone\n");
  fs::create_directories(src_ + "/sub");
  auto a = freeze(
      "set -e; echo changed > input.txt; echo new > sub/new.txt; mkdir -p deep/er; "
      "echo deeper > deep/er/file; test ! -e /out",
      {"mounts.source_writable=true", "mounts.outputs_from=source"});
  auto c = run(a, "writable1");
  ASSERT_EQ(c.status.code, 0) << c.out << c.err;
  json r = receipt("writable1");
  EXPECT_EQ(r["state"], "built");
  ASSERT_EQ(r["outputs"].size(), 3u) << r["outputs"].dump();
  EXPECT_EQ(r["outputs"][0]["path"], "deep/er/file");
  EXPECT_EQ(r["outputs"][1]["path"], "input.txt");
  EXPECT_EQ(r["outputs"][2]["path"], "sub/new.txt");
  std::string out = state_ + "/results/writable1/out";
  EXPECT_EQ(read_text(out + "/input.txt"), "changed\n");
  EXPECT_EQ(read_text(out + "/sub/new.txt"), "new\n");
  EXPECT_FALSE(fs::exists(out + "/kept.txt"));  // unchanged: an input, not an output
  // The host's tree is what was admitted, before and after.
  EXPECT_EQ(read_text(src_ + "/input.txt"), "input\n");
  EXPECT_FALSE(fs::exists(src_ + "/sub/new.txt"));
  auto v = sealrun({"receipt", "verify", receipt_path("writable1")});
  EXPECT_EQ(v.status.code, 0) << v.out << v.err;
}

}  // namespace
}  // namespace sealrun::testing
