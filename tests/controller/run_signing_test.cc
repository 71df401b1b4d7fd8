// SPDX-License-Identifier: Apache-2.0
// Receipts an auditor can trust (issue 11), through the built binary: a run signs its receipt with
// the state directory's key and records it in the ledger; `receipt verify --key` catches a forgery
// (fields edited, digest recomputed), a receipt re-signed with another key and an edited envelope;
// `--outputs` catches an appended byte, a deleted and an extra file; export tells the truth about a
// failed run; the ledger catches a deleted, reordered or edited line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "attest/base64.h"
#include "attest/dsse.h"
#include "attest/keys.h"
#include "controller/receipt/receipt.h"
#include "fingerprint/sha256.h"
#include "tests/controller/run_test_support.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class SignedRunTest : public RunTest {
 protected:
  void SetUp() override {
    RunTest::SetUp();
    fs::create_directories(state_);
    auto k = sealrun({"key", "generate", "--out-dir", state_ + "/keys"});
    ASSERT_EQ(k.status.code, 0) << k.err;
    pub_ = state_ + "/keys/sealrun.pub";
    auto other = sealrun({"key", "generate", "--out-dir", dir_ / "other"});
    ASSERT_EQ(other.status.code, 0) << other.err;
  }
  Captured verify(const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"receipt", "verify"};
    args.insert(args.end(), extra.begin(), extra.end());
    return sealrun(args);
  }
  // Edits a receipt and recomputes its (unkeyed) digest: what a forger can always do.
  void forge(const std::string& path, const std::function<void(json&)>& edit) {
    std::ifstream in(path);
    json doc = json::parse(in);
    edit(doc);
    doc["digest"] = {{"algorithm", "sha256"}, {"value", sha256_hex(receipt::digest_payload(doc))}};
    write_text(path, doc.dump(2) + "\n");
  }
  std::string pub_;
};

TEST_F(SignedRunTest, ARunSignsItsReceiptAndAForgeryFailsWithTheKey) {
  auto a = freeze("false");  // a failed run: exit 5
  auto c = run(a, "f1");
  ASSERT_EQ(c.status.code, 5) << c.err;
  std::string receipt = receipt_path("f1");
  ASSERT_TRUE(fs::exists(state_ + "/results/f1/receipt.dsse.json"));
  EXPECT_EQ(verify({receipt, "--key", pub_}).status.code, 0);
  // Without the key, verify passes its own checks but says what it did not check.
  auto plain = verify({receipt});
  EXPECT_EQ(plain.status.code, 0) << plain.out;
  EXPECT_NE(plain.out.find("not checked"), std::string::npos) << plain.out;

  forge(receipt, [](json& d) {
    d["state"] = "built";
    d["exit"] = 0;
    d["reason"] = "the job exited 0 and every check passed";
    d["commands"][0]["exit"] = 0;
  });
  EXPECT_EQ(verify({receipt}).status.code, 0) << "the digest alone cannot tell";
  auto keyed = verify({receipt, "--key", pub_});
  EXPECT_NE(keyed.status.code, 0) << keyed.out;
  EXPECT_NE(keyed.out.find("FAIL  signature"), std::string::npos) << keyed.out;
}

TEST_F(SignedRunTest, AnotherKeyOrAnEditedEnvelopeFails) {
  auto a = freeze("echo hi > /out/a");
  ASSERT_EQ(run(a, "s1").status.code, 0);
  std::string receipt = receipt_path("s1");
  std::string envelope = state_ + "/results/s1/receipt.dsse.json";
  EXPECT_NE(verify({receipt, "--key", dir_ / "other/sealrun.pub"}).status.code, 0);
  // Re-signed with another key: verifies with that key, never with the state directory's.
  std::string original = read_text(envelope);
  auto other = attest::load_signing_key(dir_ / "other/sealrun.key");
  ASSERT_TRUE(other.ok()) << other.error().message();
  auto resigned = attest::sign_receipt(*other, read_text(receipt));
  ASSERT_TRUE(resigned.ok());
  write_text(envelope, *resigned);
  EXPECT_EQ(verify({receipt, "--key", dir_ / "other/sealrun.pub"}).status.code, 0);
  EXPECT_NE(verify({receipt, "--key", pub_}).status.code, 0);
  write_text(envelope, original);
  json env = json::parse(read_text(envelope));
  std::string payload = *attest::base64_decode(env["payload"].get<std::string>(), 1 << 22, "p");
  payload.insert(payload.find("\"state\""), " ");
  env["payload"] = attest::base64_encode(payload);
  write_text(envelope, env.dump());
  EXPECT_NE(verify({receipt, "--key", pub_}).status.code, 0) << "an edited payload";
  fs::remove(envelope);
  auto gone = verify({receipt});
  EXPECT_NE(gone.status.code, 0) << "a receipt that says it is signed, without its envelope";
}

TEST_F(SignedRunTest, OutputsAreReHashedOnDisk) {
  auto a = freeze("echo one > /out/a; echo two > /out/b");
  ASSERT_EQ(run(a, "o1").status.code, 0);
  std::string receipt = receipt_path("o1");
  std::string out = state_ + "/results/o1/out";
  EXPECT_EQ(verify({receipt, "--outputs", out}).status.code, 0);
  { std::ofstream(out + "/a", std::ios::app) << "x"; }
  auto changed = verify({receipt, "--outputs", out});
  EXPECT_NE(changed.status.code, 0);
  EXPECT_NE(changed.out.find("changed: a"), std::string::npos) << changed.out;
  write_text(out + "/a", "one\n");
  fs::remove(out + "/b");
  write_text(out + "/c", "extra\n");
  auto other = verify({receipt, "--outputs", out});
  EXPECT_NE(other.out.find("missing: b"), std::string::npos) << other.out;
  EXPECT_NE(other.out.find("extra: c"), std::string::npos) << other.out;
}

TEST_F(SignedRunTest, ExportRefusesAFailedRunUnlessAskedAndThenSaysSo) {
  auto a = freeze("echo x > /out/x; false");
  ASSERT_EQ(run(a, "e1").status.code, 5);
  auto refused = sealrun({"receipt", "export", receipt_path("e1")});
  EXPECT_EQ(refused.status.code, 1) << refused.out;
  auto included = sealrun({"receipt", "export", receipt_path("e1"), "--include-failed"});
  ASSERT_EQ(included.status.code, 0) << included.err;
  json st = json::parse(included.out);
  EXPECT_EQ(st["predicate"]["buildDefinition"]["internalParameters"]["outcome"]["state"], "failed");
}

TEST_F(SignedRunTest, TheLedgerCatchesADeletedReorderedOrEditedLine) {
  auto a = freeze("true");
  for (const char* id : {"l1", "l2", "l3"}) ASSERT_EQ(run(a, id).status.code, 0);
  std::string ledger = state_ + "/ledger.jsonl";
  EXPECT_EQ(verify({"--ledger", state_, "--key", pub_}).status.code, 0);
  auto list = sealrun({"receipt", "list", "--state-dir", state_, "--json"});
  ASSERT_EQ(list.status.code, 0) << list.err;
  EXPECT_EQ(json::parse(list.out)["entries"].size(), 3u);
  std::string original = read_text(ledger);
  std::vector<std::string> lines;
  for (size_t s = 0, e; (e = original.find('\n', s)) != std::string::npos; s = e + 1)
    lines.push_back(original.substr(s, e - s + 1));
  ASSERT_EQ(lines.size(), 3u);
  write_text(ledger, lines[0] + lines[2]);  // deleted
  EXPECT_NE(verify({"--ledger", state_}).status.code, 0);
  write_text(ledger, lines[1] + lines[0] + lines[2]);  // reordered
  EXPECT_NE(verify({"--ledger", state_}).status.code, 0);
  std::string edited = lines[1];
  edited.replace(edited.find("built"), 5, "faild");
  write_text(ledger, lines[0] + edited + lines[2]);  // edited
  EXPECT_NE(verify({"--ledger", state_}).status.code, 0);
  write_text(ledger, original);
  EXPECT_EQ(verify({"--ledger", state_}).status.code, 0);
}

}  // namespace
}  // namespace sealrun::testing
