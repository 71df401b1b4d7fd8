// SPDX-License-Identifier: Apache-2.0
// Unit tests of the rule for an admission without a toolchain (docs/admission.md): allowed when a
// learned closure, an image or pinned trees give the job its programs, or while a closure is
// still to come (a learning run's own admission); otherwise an error whose hint says what to
// give. Also: the key is left out of the canonical bytes, and verify_pins() says what stands in.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "admission/document.h"
#include "admission/verify.h"
#include "fingerprint/sha256.h"
#include "tests/support/temp_dir.h"

namespace sealrun::admission {
namespace {

using nlohmann::json;

const std::string kA(64, 'a');

json without_toolchain() {
  return {{"schema", "sealrun-admission-v1"},
          {"command", {{"argv", {"/bin/sh", "build.sh"}}}},
          {"source",
           {{"kind", "tree"},
            {"path", "/srv/src"},
            {"manifest", json::array()},
            {"manifest_sha256", kA}}}};
}

struct RuleCase {
  const char* name;
  std::function<void(json&)> add;
  bool closure_follows;
  bool accepted;
};

class ToolchainRuleTest : public ::testing::TestWithParam<RuleCase> {};

TEST_P(ToolchainRuleTest, MissingToolchainIsAllowedOnlyWithSomethingInItsPlace) {
  const RuleCase& c = GetParam();
  json j = without_toolchain();
  c.add(j);
  ParseOptions options;
  options.closure_follows = c.closure_follows;
  auto doc = parse_admission_json(j, options);
  if (!c.accepted) {
    ASSERT_FALSE(doc.ok()) << "accepted: " << j.dump();
    const std::string& m = doc.error().message();
    EXPECT_NE(m.find("toolchain: missing"), std::string::npos) << m;
    EXPECT_NE(m.find("--toolchain DIR, or --learn to pin what the command uses"), std::string::npos)
        << m;
    return;
  }
  ASSERT_TRUE(doc.ok()) << doc.error().message();
  EXPECT_FALSE(doc->toolchain.has_value());
  // The key stays absent in the canonical bytes, and they read back as themselves.
  std::string bytes = canonical_admission_bytes(*doc);
  EXPECT_EQ(bytes.find("\"toolchain\""), std::string::npos) << bytes;
  auto again = parse_admission_bytes(bytes, options);
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_EQ(canonical_admission_bytes(*again), bytes);
}

const RuleCase kRuleCases[] = {
    {"nothing_in_its_place", [](json&) {}, false, false},
    {"learned_closure",
     [](json& j) {
       j["host_files"] = {{{"path", "/usr/bin/gcc-12"}, {"sha256", kA}}};
     },
     false, true},
    // Links and listed directories alone hold no program.
    {"links_and_dirs_only",
     [](json& j) {
       j["host_links"] = {{{"path", "/bin"}, {"target", "usr/bin"}}};
       j["host_dirs"] = {"/usr/include"};
     },
     false, false},
    {"image",
     [](json& j) {
       j["image"] = {{"archive", "/srv/img.tar"},
                     {"archive_sha256", kA},
                     {"image_id", "sha256:" + kA},
                     {"diff_ids", {"sha256:" + kA}}};
     },
     false, true},
    {"trees",
     [](json& j) {
       j["trees"] = {{{"host_path", "/srv/busybox"}, {"job_path", "/bin"}, {"tree_sha256", kA}}};
     },
     false, true},
    // A learning run's own admission: its closure is what the run finds out.
    {"closure_to_come", [](json&) {}, true, true},
    {"empty_host_files", [](json& j) { j["host_files"] = json::array(); }, false, false},
};

INSTANTIATE_TEST_SUITE_P(Table, ToolchainRuleTest, ::testing::ValuesIn(kRuleCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ToolchainRule, AToolchainIsStillReadAndWrittenAsBefore) {
  json j = without_toolchain();
  j["toolchain"] = {{"root", "/opt/tc"}, {"tree_sha256", kA}};
  auto doc = parse_admission_json(j);
  ASSERT_TRUE(doc.ok()) << doc.error().message();
  ASSERT_TRUE(doc->toolchain.has_value());
  EXPECT_EQ(doc->toolchain->mount_path, "/opt/tc");
  EXPECT_NE(canonical_admission_bytes(*doc).find("\"toolchain\""), std::string::npos);
  EXPECT_EQ(toolchain_stand_in(*doc), "toolchain.root /opt/tc");
}

// Where the toolchain's check would be, the verifications say what is the toolchain instead.
TEST(ToolchainRule, VerificationsSayTheLearnedClosureIsTheToolchain) {
  sealrun::testing::TempDir dir;
  sealrun::testing::write_text(dir / "cc", "a compiler");
  json j = without_toolchain();
  j["host_files"] = {{{"path", dir / "cc"}, {"sha256", sha256_hex("a compiler")}}};
  j["mounts"] = {{"tmp", "/job-tmp"}};  // the file is under the host's /tmp
  auto doc = parse_admission_json(j);
  ASSERT_TRUE(doc.ok()) << doc.error().message();
  EXPECT_EQ(toolchain_stand_in(*doc), "the learned closure (1 host files)");
  auto checks = verify_pins(*doc);
  const PinCheck* toolchain = nullptr;
  const PinCheck* host_files = nullptr;
  for (const PinCheck& c : checks) {
    if (c.target == "toolchain") toolchain = &c;
    if (c.target == "host_files") host_files = &c;
    EXPECT_NE(c.target, "toolchain.tree_sha256");
  }
  ASSERT_NE(toolchain, nullptr);
  EXPECT_EQ(toolchain->expected, "the learned closure (1 host files)");
  EXPECT_TRUE(toolchain->passed());
  ASSERT_NE(host_files, nullptr);
  EXPECT_TRUE(host_files->passed()) << host_files->observed;
  // Not repeated by the re-check after a run: only the view's own pins are.
  for (const PinCheck& c : verify_view_pins(*doc)) EXPECT_NE(c.target, "toolchain");
  VerifyOptions skip;
  skip.skip_reason = "test";
  bool listed = false;
  for (const PinCheck& c : verify_pins(*doc, skip))
    listed = listed || (c.target == "toolchain" && c.status == CheckStatus::kSkipped);
  EXPECT_TRUE(listed);
}

}  // namespace
}  // namespace sealrun::admission
