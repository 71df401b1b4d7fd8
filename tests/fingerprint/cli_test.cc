// SPDX-License-Identifier: Apache-2.0
// `sealrun fingerprint tree|file` as a user runs it: the built binary, its stdout, stderr and exit
// codes (0 done, 1 failed with a message naming the input, 2 usage).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/process.h"
#include "fingerprint/sha256.h"
#include "tests/support/temp_dir.h"

namespace sealrun {
namespace {

using ::testing::HasSubstr;
using testing::read_text;
using testing::TempDir;
using testing::write_text;

Captured sealrun_cli(std::vector<std::string> args) {
  SpawnOptions options;
  options.argv = {SEALRUN_BINARY_DIR "/sealrun"};
  options.argv.insert(options.argv.end(), args.begin(), args.end());
  auto result = run_capture(options, 60000);
  EXPECT_TRUE(result.ok()) << result.error().message();
  return result.ok() ? std::move(result).value() : Captured{};
}

std::string make_tree(const TempDir& dir) {
  const std::string t = dir / "tree";
  std::filesystem::create_directories(t + "/sub");
  write_text(t + "/a.txt", "alpha\n");
  write_text(t + "/sub/b.bin", std::string(300000, 'b'));
  EXPECT_EQ(::symlink("a.txt", (t + "/link").c_str()), 0);
  return t;
}

TEST(FingerprintCli, TreeJsonSummaryMatchesTheInventoryFile) {
  TempDir dir;
  const std::string t = make_tree(dir);
  auto run = sealrun_cli({"fingerprint", "tree", t, "--out", dir / "inv.jsonl", "--json"});
  ASSERT_EQ(run.status.code, 0) << run.err;
  auto summary = nlohmann::json::parse(run.out);
  EXPECT_EQ(summary["sha256"], sha256_hex(read_text(dir / "inv.jsonl")));
  EXPECT_EQ(summary["entries"], 5);  // . a.txt link sub sub/b.bin
  EXPECT_EQ(summary["regular_bytes"], 300006);
  EXPECT_EQ(run.err, "") << "no progress output for a step shorter than 5 s without a terminal";

  auto again = sealrun_cli({"fingerprint", "tree", t, "--out", dir / "again.jsonl", "--json"});
  ASSERT_EQ(again.status.code, 0) << again.err;
  EXPECT_EQ(nlohmann::json::parse(again.out)["sha256"], summary["sha256"]);
}

// --quiet (issue 29) on every fingerprint command: no progress, the result still printed.
TEST(FingerprintCli, QuietOnEveryCommand) {
  TempDir dir;
  const std::string t = make_tree(dir);
  auto tree = sealrun_cli({"fingerprint", "tree", t, "--out", dir / "q.jsonl", "--quiet"});
  ASSERT_EQ(tree.status.code, 0) << tree.err;
  EXPECT_EQ(tree.err, "");
  EXPECT_NE(tree.out.find("tree sha256"), std::string::npos) << tree.out;
  auto file = sealrun_cli({"fingerprint", "file", t + "/a.txt", "-q"});
  ASSERT_EQ(file.status.code, 0) << file.err;
  EXPECT_NE(file.out.find(sha256_hex("alpha\n")), std::string::npos) << file.out;
  // An error is still said.
  auto missing = sealrun_cli({"fingerprint", "tree", dir / "nope", "--out", dir / "n", "--quiet"});
  EXPECT_EQ(missing.status.code, 1);
  EXPECT_NE(missing.err.find("nope"), std::string::npos) << missing.err;
}

TEST(FingerprintCli, TreeHumanSummarySaysWhatEachNumberIs) {
  TempDir dir;
  const std::string t = make_tree(dir);
  auto run = sealrun_cli({"fingerprint", "tree", t, "--out", dir / "inv.jsonl"});
  ASSERT_EQ(run.status.code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr(sha256_hex(read_text(dir / "inv.jsonl"))));
  EXPECT_THAT(run.out, HasSubstr("entries        5"));
  EXPECT_THAT(run.out, HasSubstr("regular bytes  300006"));
}

TEST(FingerprintCli, TreeFailuresExitOneNamingTheInput) {
  TempDir dir;
  const std::string t = make_tree(dir);
  write_text(dir / "exists.jsonl", "keep");
  auto exists = sealrun_cli({"fingerprint", "tree", t, "--out", dir / "exists.jsonl"});
  EXPECT_EQ(exists.status.code, 1);
  EXPECT_THAT(exists.err, HasSubstr(dir / "exists.jsonl"));
  EXPECT_EQ(read_text(dir / "exists.jsonl"), "keep");

  ASSERT_EQ(::mkfifo((t + "/fifo").c_str(), 0600), 0);
  auto fifo = sealrun_cli({"fingerprint", "tree", t, "--out", dir / "x.jsonl"});
  EXPECT_EQ(fifo.status.code, 1);
  EXPECT_THAT(fifo.err, HasSubstr("sealrun fingerprint tree: "));
  EXPECT_THAT(fifo.err, HasSubstr(t + "/fifo"));
  EXPECT_FALSE(std::filesystem::exists(dir / "x.jsonl"));
}

TEST(FingerprintCli, FileHashAndRefusals) {
  TempDir dir;
  const std::string t = make_tree(dir);
  auto run = sealrun_cli({"fingerprint", "file", t + "/a.txt", "--json"});
  ASSERT_EQ(run.status.code, 0) << run.err;
  auto j = nlohmann::json::parse(run.out);
  EXPECT_EQ(j["sha256"], sha256_hex("alpha\n"));
  EXPECT_EQ(j["bytes"], 6);

  auto human = sealrun_cli({"fingerprint", "file", t + "/a.txt"});
  ASSERT_EQ(human.status.code, 0) << human.err;
  EXPECT_THAT(human.out, HasSubstr(sha256_hex("alpha\n")));

  auto link = sealrun_cli({"fingerprint", "file", t + "/link"});
  EXPECT_EQ(link.status.code, 1);
  EXPECT_THAT(link.err, HasSubstr(t + "/link"));
  EXPECT_THAT(link.err, HasSubstr("symlink"));
}

TEST(FingerprintCli, UsageErrorsExitTwoAndHelpExitsZero) {
  TempDir dir;
  EXPECT_EQ(sealrun_cli({"fingerprint"}).status.code, 2);
  EXPECT_EQ(sealrun_cli({"fingerprint", "tree", dir.str()}).status.code, 2);  // no --out
  EXPECT_EQ(sealrun_cli({"fingerprint", "file"}).status.code, 2);
  auto help = sealrun_cli({"fingerprint", "tree", "--help"});
  EXPECT_EQ(help.status.code, 0);
  EXPECT_THAT(help.out, HasSubstr("--out"));
  auto fp_help = sealrun_cli({"fingerprint", "--help"});
  EXPECT_EQ(fp_help.status.code, 0);
  EXPECT_THAT(fp_help.out, HasSubstr("tree"));
  EXPECT_THAT(fp_help.out, HasSubstr("file"));
}

}  // namespace
}  // namespace sealrun
