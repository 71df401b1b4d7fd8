// SPDX-License-Identifier: Apache-2.0
// `sealrun key generate`, run as a user would: --help, the files and modes it writes, --json, and
// its refusal to overwrite (exit 1, the file named, the key unchanged) or to run without --out-dir.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "attest/keys.h"
#include "core/process.h"
#include "tests/support/temp_dir.h"

namespace sealrun::attest {
namespace {

using sealrun::testing::read_text;
using sealrun::testing::TempDir;

Captured sealrun_cli(std::vector<std::string> args) {
  SpawnOptions o;
  o.argv = {SEALRUN_BINARY_DIR "/sealrun"};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  auto c = run_capture(o, 60 * 1000);
  EXPECT_TRUE(c) << c.error().message();
  return c ? *c : Captured{};
}

TEST(KeyCli, HelpDescribesTheFiles) {
  auto c = sealrun_cli({"key", "generate", "--help"});
  EXPECT_EQ(c.status.code, 0);
  EXPECT_NE(c.out.find("sealrun.key"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("--out-dir"), std::string::npos);
  EXPECT_EQ(sealrun_cli({"key", "--help"}).status.code, 0);
}

TEST(KeyCli, GenerateThenRefuseToOverwrite) {
  TempDir tmp;
  std::string dir = tmp / "keys";
  auto c = sealrun_cli({"key", "generate", "--out-dir", dir, "--json"});
  ASSERT_EQ(c.status.code, 0) << c.err;
  auto doc = nlohmann::json::parse(c.out);
  EXPECT_EQ(doc["key_path"], dir + "/sealrun.key");
  EXPECT_EQ(doc["pub_path"], dir + "/sealrun.pub");
  auto pub = load_public_key(dir + "/sealrun.pub");
  ASSERT_TRUE(pub);
  EXPECT_EQ(doc["key_id"], pub->key_id());
  struct stat st {};
  ASSERT_EQ(::stat((dir + "/sealrun.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);

  std::string before = read_text(dir + "/sealrun.key");
  auto again = sealrun_cli({"key", "generate", "--out-dir", dir});
  EXPECT_EQ(again.status.code, 1);
  EXPECT_NE(again.err.find("sealrun key generate: "), std::string::npos) << again.err;
  EXPECT_NE(again.err.find(dir + "/sealrun.key: already exists"), std::string::npos) << again.err;
  EXPECT_EQ(read_text(dir + "/sealrun.key"), before);

  auto human = sealrun_cli({"key", "generate", "--out-dir", tmp / "k2"});
  EXPECT_EQ(human.status.code, 0) << human.err;
  EXPECT_NE(human.out.find("key id "), std::string::npos) << human.out;
}

TEST(KeyCli, OutDirIsRequired) {
  auto c = sealrun_cli({"key", "generate"});
  EXPECT_EQ(c.status.code, 2) << c.out << c.err;
  EXPECT_NE(c.err.find("--out-dir"), std::string::npos) << c.err;
}

}  // namespace
}  // namespace sealrun::attest
