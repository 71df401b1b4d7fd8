// SPDX-License-Identifier: Apache-2.0
// Runs the built `sealrun fingerprint image|source` binary: the JSON keys scripts rely on, exit
// codes (0 match, 1 mismatch or error, 2 usage), and that each mismatch is named.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/process.h"
#include "fingerprint/sha256.h"
#include "tests/fingerprint/tar_builder.h"
#include "tests/support/temp_dir.h"

namespace sealrun {
namespace {

using testing::read_text;
using testing::TempDir;
using testing::write_text;

Captured sealrun_cli(std::vector<std::string> args) {
  SpawnOptions o;
  o.argv = {std::string(SEALRUN_BINARY_DIR) + "/sealrun"};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  auto c = run_capture(o, 120 * 1000);
  EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error().message());
  return c.ok() ? *c : Captured{};
}

TEST(FingerprintCli, ImageJsonHasTheContractKeys) {
  TempDir t;
  auto img = testing::make_oci_image();
  std::string bytes = testing::make_tar(img.members);
  write_text(t / "img.tar", bytes);
  auto c = sealrun_cli({"fingerprint", "image", t / "img.tar", "--json"});
  ASSERT_EQ(c.status.code, 0) << c.err;
  auto doc = nlohmann::json::parse(c.out);
  EXPECT_EQ(doc.size(), 4u);
  EXPECT_EQ(doc["archive_sha256"], sha256_hex(bytes));
  EXPECT_EQ(doc["image_id"], "sha256:" + img.config_hex);
  EXPECT_EQ(doc["diff_ids"], nlohmann::json::array({"sha256:" + img.layer_hex}));
  EXPECT_EQ(doc["format"], "oci-archive");

  bytes[bytes.size() / 2] ^= 1;
  write_text(t / "bad.tar", bytes);
  auto bad = sealrun_cli({"fingerprint", "image", t / "bad.tar"});
  EXPECT_EQ(bad.status.code, 1);
  EXPECT_EQ(bad.err.rfind("sealrun fingerprint image: ", 0), 0u) << bad.err;
  EXPECT_NE(bad.err.find("bad.tar"), std::string::npos) << bad.err;
  EXPECT_EQ(sealrun_cli({"fingerprint", "image", "--help"}).status.code, 0);
  EXPECT_EQ(sealrun_cli({"fingerprint", "image"}).status.code, 2);
}

TEST(FingerprintCli, SourceWritesAndVerifiesAManifest) {
  TempDir t;
  std::string repo = t / "repo";
  std::string git = "git -c user.name=t -c user.email=t@example.org -c init.defaultBranch=main";
  std::filesystem::create_directories(repo + "/src");
  write_text(repo + "/src/main.c", "int main(void) { return 0; }\n");
  write_text(repo + "/README", "hello\n");
  ASSERT_EQ(std::system((git + " init -q " + repo + " && " + git + " -C " + repo + " add -A && " +
                         git + " -C " + repo + " commit -qm one")
                            .c_str()),
            0);
  auto first = sealrun_cli(
      {"fingerprint", "source", repo, "--json", "--manifest-out", t / "manifest.jsonl"});
  ASSERT_EQ(first.status.code, 0) << first.err;
  auto doc = nlohmann::json::parse(first.out);
  std::string commit = doc["commit"], tree = doc["tree"];
  EXPECT_EQ(commit.size(), 40u);
  EXPECT_EQ(doc["files"], 2);
  std::string manifest = read_text(t / "manifest.jsonl");
  EXPECT_EQ(doc["manifest_sha256"], sha256_hex(manifest));

  auto ok = sealrun_cli({"fingerprint", "source", repo, "--expect-commit", commit, "--expect-tree",
                         tree, "--manifest", t / "manifest.jsonl", "--json"});
  EXPECT_EQ(ok.status.code, 0) << ok.out << ok.err;
  EXPECT_EQ(nlohmann::json::parse(ok.out)["result"], "pass");

  // Same shape, one digest changed: still a canonical manifest, but not this source.
  std::string altered = manifest;
  size_t at = altered.find("\"sha256\":\"") + 10;
  altered[at] = altered[at] == '0' ? '1' : '0';
  write_text(t / "altered.jsonl", altered);
  auto bad = sealrun_cli({"fingerprint", "source", repo, "--expect-commit", commit, "--expect-tree",
                          std::string(40, '0'), "--manifest", t / "altered.jsonl"});
  EXPECT_EQ(bad.status.code, 1);
  EXPECT_NE(bad.out.find("FAIL  manifest: README"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("FAIL  tree"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("pass  commit"), std::string::npos) << bad.out;

  auto exists =
      sealrun_cli({"fingerprint", "source", repo, "--manifest-out", t / "manifest.jsonl"});
  EXPECT_EQ(exists.status.code, 1);
  EXPECT_NE(exists.err.find("already exists"), std::string::npos) << exists.err;
  EXPECT_EQ(sealrun_cli({"fingerprint", "source", t / "nowhere"}).status.code, 1);
  EXPECT_EQ(sealrun_cli({"fingerprint", "source", "--help"}).status.code, 0);
}

}  // namespace
}  // namespace sealrun
