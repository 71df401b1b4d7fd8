// `sealrun run` with a writable source (admission mounts.source_writable and
// mounts.outputs_from "source"): the job changes and adds files in /src, and exactly those become
// the outputs, while the admission still pins the source as it was before the run.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "tests/controller/run_test_support.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST_F(RunTest, WritableSourceOutputsAreTheNewAndChangedFiles) {
  write_text(src_ + "/kept.txt", "left alone\n");
  fs::create_directories(src_ + "/sub");
  // The job user writes into the host tree itself, as into a remote-execution input root, whose
  // directories bb_worker makes world-writable.
  for (const std::string& d : {src_, src_ + "/sub"}) ASSERT_EQ(::chmod(d.c_str(), 0777), 0);
  ASSERT_EQ(::chmod((src_ + "/input.txt").c_str(), 0666), 0);
  auto a = freeze("set -e; echo changed > input.txt; echo new > sub/new.txt; echo x > /out/x",
                  {"mounts.source_writable=true", "mounts.outputs_from=source"});
  auto c = run(a, "writable1");
  ASSERT_EQ(c.status.code, 0) << c.out << c.err;
  json r = receipt("writable1");
  EXPECT_EQ(r["state"], "built");
  ASSERT_EQ(r["outputs"].size(), 2u) << r["outputs"].dump();
  EXPECT_EQ(r["outputs"][0]["path"], "input.txt");
  EXPECT_EQ(r["outputs"][1]["path"], "sub/new.txt");
  EXPECT_EQ(read_text(src_ + "/input.txt"), "changed\n");  // written into the host tree
  EXPECT_EQ(read_text(src_ + "/kept.txt"), "left alone\n");
  auto v = sealrun({"receipt", "verify", receipt_path("writable1")});
  EXPECT_EQ(v.status.code, 0) << v.out << v.err;
}

TEST_F(RunTest, ReadOnlySourceStaysReadOnlyByDefault) {
  // Writable for anyone on the host: only the read-only mount stops the job.
  ASSERT_EQ(::chmod(src_.c_str(), 0777), 0);
  ASSERT_EQ(::chmod((src_ + "/input.txt").c_str(), 0666), 0);
  auto a = freeze("echo changed > input.txt");
  auto c = run(a, "readonly1");
  EXPECT_EQ(c.status.code, 5) << c.out << c.err;
  EXPECT_EQ(read_text(src_ + "/input.txt"), "input\n");
  std::string tail = receipt("readonly1")["commands"][0]["stderr"]["tail"];
  EXPECT_NE(tail.find("Read-only file system"), std::string::npos) << tail;
}

}  // namespace
}  // namespace sealrun::testing
