// SPDX-License-Identifier: Apache-2.0
// `sealrun run` with a writable source (admission mounts.source_writable and
// mounts.outputs_from "source"): the job changes and adds files in /src — the run's private,
// verified copy of the source, never the host's tree — and exactly the new and changed regular
// files become the outputs, moved to results/<id>/out and listed in outputs.jsonl like any output.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "fingerprint/sha256.h"
#include "tests/controller/run_test_support.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST_F(RunTest, WritableSourceOutputsAreTheNewAndChangedFiles) {
  write_text(src_ + "/kept.txt", "left alone\n");
  write_text(src_ + "/gone.txt", "deleted by the job\n");
  fs::create_directories(src_ + "/sub");
  // A hard link to an unchanged input is a new path, so an output, and the first of its inode
  // among the outputs (its input twin is not one); a symlink the job makes is not an output.
  auto a = freeze(
      "set -e; echo changed > input.txt; echo new > sub/new.txt; mkdir -p deep/er; "
      "echo deeper > deep/er/file; ln kept.txt linked.txt; rm gone.txt; ln -s kept.txt sym; "
      "test ! -e /out",
      {"mounts.source_writable=true", "mounts.outputs_from=source"});
  auto c = run(a, "writable1");
  ASSERT_EQ(c.status.code, 0) << c.out << c.err;
  json r = receipt("writable1");
  EXPECT_EQ(r["state"], "built");
  ASSERT_EQ(r["outputs"].size(), 4u) << r["outputs"].dump();
  EXPECT_EQ(r["outputs"][0]["path"], "deep/er/file");
  EXPECT_EQ(r["outputs"][1]["path"], "input.txt");
  EXPECT_EQ(r["outputs"][2]["path"], "linked.txt");
  EXPECT_FALSE(r["outputs"][2].contains("hardlink_of")) << r["outputs"][2].dump();
  EXPECT_EQ(r["outputs"][3]["path"], "sub/new.txt");
  EXPECT_EQ(r["outputs_total"], 4);
  std::string results = state_ + "/results/writable1";
  std::string list = read_text(results + "/outputs.jsonl");
  EXPECT_EQ(sha256_hex(list), r["outputs_list_sha256"]);
  EXPECT_EQ(std::count(list.begin(), list.end(), '\n'), 4);
  std::string out = results + "/out";
  EXPECT_EQ(read_text(out + "/input.txt"), "changed\n");
  EXPECT_EQ(read_text(out + "/sub/new.txt"), "new\n");
  EXPECT_EQ(read_text(out + "/deep/er/file"), "deeper\n");
  EXPECT_EQ(read_text(out + "/linked.txt"), "left alone\n");
  EXPECT_FALSE(fs::exists(out + "/kept.txt"));  // unchanged: an input, not an output
  EXPECT_FALSE(fs::exists(fs::symlink_status(out + "/sym")));
  // The host's tree is what was admitted, before and after.
  EXPECT_EQ(read_text(src_ + "/input.txt"), "input\n");
  EXPECT_EQ(read_text(src_ + "/gone.txt"), "deleted by the job\n");
  EXPECT_FALSE(fs::exists(src_ + "/sub/new.txt"));
  auto v = sealrun({"receipt", "verify", receipt_path("writable1")});
  EXPECT_EQ(v.status.code, 0) << v.out << v.err;
}

TEST_F(RunTest, ReadOnlySourceStaysReadOnlyByDefault) {
  auto a = freeze("echo changed > input.txt");
  auto c = run(a, "readonly1");
  EXPECT_EQ(c.status.code, 5) << c.out << c.err;
  EXPECT_EQ(read_text(src_ + "/input.txt"), "input\n");
  std::string tail = receipt("readonly1")["commands"][0]["stderr"]["tail"];
  EXPECT_NE(tail.find("Read-only file system"), std::string::npos) << tail;
}

}  // namespace
}  // namespace sealrun::testing
