// SPDX-License-Identifier: Apache-2.0
// Unit tests of the admission gate on real (small, temporary) files: freezing, the all-pass case,
// each pin altered by one byte, each pinned file altered by one byte, a wrong --sha256, hostile
// files (1 GiB, symlink, FIFO, truncated), expiry. Sources here are plain trees; git sources and
// images are covered by the integration test.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <set>

#include "admission/admitted.h"
#include "admission/freeze.h"
#include "fingerprint/sha256.h"
#include "tests/support/temp_dir.h"

namespace sealrun::admission {
namespace {

using sealrun::testing::read_text;
using sealrun::testing::TempDir;
using sealrun::testing::write_text;

// The checks that ran and failed (a skipped check is listed apart, never as a failure).
std::set<std::string> failed_targets(const AdmissionReport& r) {
  std::set<std::string> out;
  for (const PinCheck& c : r.checks)
    if (c.status == CheckStatus::kFail) out.insert(c.target);
  return out;
}

void flip_byte(const std::string& path, size_t offset) {
  std::string s = read_text(path);
  ASSERT_LT(offset, s.size());
  s[offset] = static_cast<char>(s[offset] ^ 0x01);
  write_text(path, s);
}

class AdmitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::mkdir((dir_ / "src").c_str(), 0755);
    ::mkdir((dir_ / "src/lib").c_str(), 0755);
    write_text(dir_ / "src/main.c", "int main(void) { return 0; }\n");
    write_text(dir_ / "src/lib/util.c", "int util(void) { return 1; }\n");
    ::mkdir((dir_ / "tc").c_str(), 0755);
    ::mkdir((dir_ / "tc/bin").c_str(), 0755);
    write_text(dir_ / "tc/bin/cc", "#!/bin/sh\necho compiler\n");
    write_text(dir_ / "tool", "host tool bytes\n");
    request_.out = dir_ / "admission.json";
    request_.source = dir_ / "src";
    request_.toolchain = dir_ / "tc";
    request_.toolchain_mount = "/opt/tc";
    request_.host_tools = {dir_ / "tool"};
    request_.argv = {"/opt/tc/bin/cc", "main.c"};
    request_.env = {"LANG=C.UTF-8"};
  }

  FreezeResult freeze() {
    auto r = freeze_admission(request_);
    EXPECT_TRUE(r.ok()) << r.error().message();
    return r.ok() ? std::move(r).value() : FreezeResult{};
  }

  // Writes `bytes` as a new admission and admits it with its own digest.
  AdmitOutcome admit_bytes(const std::string& bytes, const VerifyOptions& options = {}) {
    std::string path = dir_ / "edited.json";
    write_text(path, bytes);
    return admit(path, sha256_hex(bytes), options);
  }

  TempDir dir_;
  FreezeRequest request_;
};

TEST_F(AdmitTest, FrozenAdmissionPassesEveryCheck) {
  FreezeResult frozen = freeze();
  EXPECT_EQ(frozen.sha256, sha256_hex(read_text(request_.out)));
  AdmitOutcome out = admit(request_.out, frozen.sha256);
  ASSERT_TRUE(out.report.all_passed()) << out.report.summary();
  ASSERT_TRUE(out.admitted.has_value());
  EXPECT_EQ(out.admitted->sha256(), frozen.sha256);
  EXPECT_EQ(out.admitted->source_root(), dir_.str() + "/src");
  EXPECT_EQ(out.admitted->document().env.at("LANG"), "C.UTF-8");
  EXPECT_EQ(out.admitted->document().toolchain->mount_path, "/opt/tc");
  std::vector<std::string> targets;
  for (const PinCheck& c : out.report.checks) targets.push_back(c.target);
  EXPECT_EQ(targets, (std::vector<std::string>{"admission", "source.manifest_sha256",
                                               "source.manifest", "toolchain.tree_sha256",
                                               "host_tools:" + dir_.str() + "/tool"}));
}

TEST_F(AdmitTest, FreezingTwiceGivesIdenticalBytesAndNeverOverwritesUnasked) {
  FreezeResult a = freeze();
  auto again = freeze_admission(request_);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().message().find("--force"), std::string::npos);
  request_.out = dir_ / "second.json";
  FreezeResult b = freeze();
  EXPECT_EQ(a.sha256, b.sha256);
  EXPECT_EQ(read_text(dir_ / "admission.json"), read_text(dir_ / "second.json"));
  request_.force = true;
  EXPECT_TRUE(freeze_admission(request_).ok());
}

// A toolchain pinned earlier is written as it is (no hashing), and `admit` holds the tree to it:
// the same bytes as a fresh freeze while the tree is unchanged, a failed check once it changed.
TEST_F(AdmitTest, AToolchainPinnedEarlierIsReusedAndStillVerified) {
  FreezeResult fresh = freeze();
  request_.toolchain_pin = fresh.document.toolchain;
  request_.toolchain.clear();
  request_.out = dir_ / "reused.json";
  FreezeResult reused = freeze();
  EXPECT_EQ(reused.sha256, fresh.sha256);
  write_text(dir_ / "tc/bin/cc", "#!/bin/sh\necho another compiler\n");
  request_.out = dir_ / "stale.json";
  FreezeResult stale = freeze();  // written without looking at the tree
  AdmitOutcome o = admit(stale.path, stale.sha256);
  EXPECT_FALSE(o.admitted.has_value());
  EXPECT_EQ(failed_targets(o.report), std::set<std::string>{"toolchain.tree_sha256"});
}

TEST_F(AdmitTest, EachPinAlteredByOneByteFailsExactlyItsCheck) {
  freeze();
  const std::string original = read_text(request_.out);
  auto doc = parse_admission_bytes(original);
  ASSERT_TRUE(doc.ok());
  struct Pin {
    std::string digest;
    std::set<std::string> fails;
  };
  const std::string tool = "host_tools:" + dir_.str() + "/tool";
  // A manifest entry's digest is covered by the manifest check and, through the list's bytes,
  // by manifest_sha256: both must fail.
  std::vector<Pin> pins = {
      {doc->source.manifest_sha256, {"source.manifest_sha256"}},
      {doc->source.manifest[0].sha256, {"source.manifest", "source.manifest_sha256"}},
      {doc->toolchain->tree_sha256, {"toolchain.tree_sha256"}},
      {doc->host_tools[0].sha256, {tool}},
  };
  for (const Pin& pin : pins) {
    std::string edited = original;
    size_t at = edited.find(pin.digest);
    ASSERT_NE(at, std::string::npos);
    edited[at + 10] = edited[at + 10] == '0' ? '1' : '0';
    AdmitOutcome out = admit_bytes(edited);
    EXPECT_FALSE(out.admitted.has_value());
    EXPECT_FALSE(out.report.refusal.has_value()) << out.report.refusal->message();
    EXPECT_EQ(failed_targets(out.report), pin.fails) << "altered " << pin.digest;
  }
}

TEST_F(AdmitTest, EachPinnedFileAlteredByOneByteFailsExactlyItsCheck) {
  FreezeResult frozen = freeze();
  struct Input {
    std::string file;
    std::string target;
  };
  std::vector<Input> inputs = {{dir_ / "src/lib/util.c", "source.manifest"},
                               {dir_ / "tc/bin/cc", "toolchain.tree_sha256"},
                               {dir_ / "tool", "host_tools:" + dir_.str() + "/tool"}};
  for (const Input& in : inputs) {
    flip_byte(in.file, 3);
    AdmitOutcome out = admit(request_.out, frozen.sha256);
    EXPECT_EQ(failed_targets(out.report), std::set<std::string>{in.target}) << in.file;
    EXPECT_FALSE(out.admitted.has_value());
    flip_byte(in.file, 3);  // restore
    EXPECT_TRUE(admit(request_.out, frozen.sha256).report.all_passed());
  }
  // A file that the manifest does not list is a change too.
  write_text(dir_ / "src/extra.c", "\n");
  AdmitOutcome out = admit(request_.out, frozen.sha256);
  EXPECT_EQ(failed_targets(out.report), std::set<std::string>{"source.manifest"});
  for (const PinCheck& c : out.report.checks) {
    if (c.target == "source.manifest") {
      EXPECT_NE(c.observed.find("extra.c"), std::string::npos);
    }
  }
}

TEST_F(AdmitTest, WrongSha256FailsFirstSaysBothDigestsAndRecomputesNothing) {
  FreezeResult frozen = freeze();
  std::string wrong = frozen.sha256;
  wrong[0] = wrong[0] == 'a' ? 'b' : 'a';
  AdmitOutcome out = admit(request_.out, wrong);
  ASSERT_FALSE(out.admitted.has_value());
  ASSERT_FALSE(out.report.checks.empty());
  const PinCheck& first = out.report.checks[0];
  EXPECT_EQ(first.target, "admission");
  EXPECT_EQ(first.expected, wrong);
  EXPECT_EQ(first.observed, frozen.sha256);
  EXPECT_EQ(first.status, CheckStatus::kFail);
  for (size_t i = 1; i < out.report.checks.size(); ++i)
    EXPECT_EQ(out.report.checks[i].status, CheckStatus::kSkipped) << out.report.checks[i].target;
  // The document itself, with one byte altered, against the original digest.
  std::string edited = read_text(request_.out);
  edited[edited.find("C.UTF-8")] = 'D';
  write_text(request_.out, edited);
  out = admit(request_.out, frozen.sha256);
  EXPECT_EQ(failed_targets(out.report), std::set<std::string>{"admission"});
  EXPECT_FALSE(out.report.all_passed());
}

TEST_F(AdmitTest, HostileFilesAreRefusedQuicklyWithAReason) {
  FreezeResult frozen = freeze();
  const std::string good = read_text(request_.out);

  std::string huge = dir_ / "huge.json";  // 1 GiB, sparse: costs no disk
  {
    int fd = ::open(huge.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, 1LL << 30), 0);
    ::close(fd);
  }
  std::string link = dir_ / "link.json";
  ASSERT_EQ(::symlink(request_.out.c_str(), link.c_str()), 0);
  std::string fifo = dir_ / "fifo.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string truncated = dir_ / "truncated.json";
  write_text(truncated, good.substr(0, good.size() / 2));

  struct Case {
    std::string path;
    std::string sha256;
    std::string message;
  };
  std::vector<Case> cases = {
      {huge, frozen.sha256, "over the limit of 1048576 bytes"},
      {link, frozen.sha256, "symlink"},
      {fifo, frozen.sha256, "FIFO"},
      {dir_.str(), frozen.sha256, "directory"},
      {dir_ / "absent.json", frozen.sha256, "No such file"},
      {truncated, sha256_hex(good.substr(0, good.size() / 2)), "truncated document"},
  };
  for (const Case& c : cases) {
    auto start = std::chrono::steady_clock::now();
    AdmitOutcome out = admit(c.path, c.sha256);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1)) << c.path;
    EXPECT_FALSE(out.admitted.has_value());
    ASSERT_TRUE(out.report.refusal.has_value()) << c.path;
    EXPECT_NE(out.report.refusal->message().find(c.message), std::string::npos)
        << out.report.refusal->message();
    EXPECT_FALSE(out.report.all_passed());
  }
}

TEST_F(AdmitTest, ExpiredAdmissionIsRefused) {
  request_.sets = {"expires_at=2030-01-01T00:00:00Z"};
  FreezeResult frozen = freeze();
  VerifyOptions before;
  before.now = *parse_rfc3339("2029-12-31T23:59:59Z");
  EXPECT_TRUE(admit(request_.out, frozen.sha256, before).report.all_passed());
  VerifyOptions after;
  after.now = *parse_rfc3339("2030-01-01T00:00:00Z");
  AdmitOutcome out = admit(request_.out, frozen.sha256, after);
  EXPECT_EQ(failed_targets(out.report), std::set<std::string>{"expires_at"});
  EXPECT_FALSE(out.admitted.has_value());
}

TEST_F(AdmitTest, SetAndDraftAreValidatedByTheSameParser) {
  write_text(dir_ / "draft.json",
             R"({"limits":{"pids_max":64},"reference":{"value":"r-1","pattern":"r-[0-9]+"}})");
  request_.draft = dir_ / "draft.json";
  request_.sets = {"limits.memory_max_bytes=67108864", "limits.memory_high_bytes=50331648"};
  FreezeResult frozen = freeze();
  EXPECT_EQ(frozen.document.limits.pids_max, 64u);
  EXPECT_EQ(frozen.document.limits.memory_max_bytes, 67108864u);
  ASSERT_TRUE(frozen.document.reference.has_value());

  request_.force = true;
  request_.sets = {"limits.memory_max_bytes=lots"};
  auto bad = freeze_admission(request_);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("limits.memory_max_bytes: expected a positive integer, got "
                                       "a string"),
            std::string::npos)
      << bad.error().message();
  request_.sets = {"reference.value=x-1"};
  bad = freeze_admission(request_);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("does not match reference.pattern"), std::string::npos);
  request_.sets = {"limitz.pids_max=1"};
  bad = freeze_admission(request_);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("limitz: unknown key"), std::string::npos);
  // The draft goes through the strict reader: a duplicate key is refused.
  write_text(dir_ / "draft.json", R"({"limits":{"pids_max":64,"pids_max":65}})");
  request_.sets.clear();
  bad = freeze_admission(request_);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("limits.pids_max: duplicate key"), std::string::npos);
  // What was there before is untouched by the failed freezes.
  EXPECT_EQ(sha256_hex(read_text(request_.out)), frozen.sha256);
}

TEST_F(AdmitTest, SourceWithAnEscapingSymlinkCannotBeFrozen) {
  ASSERT_EQ(::symlink("../../etc/passwd", (dir_ / "src/passwd").c_str()), 0);
  auto r = freeze_admission(request_);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("passwd"), std::string::npos) << r.error().message();
}

}  // namespace
}  // namespace sealrun::admission
