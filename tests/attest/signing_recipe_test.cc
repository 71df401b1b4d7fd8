// docs/signing.md's openssl recipe, taken from the page itself and run with sh(1) against a good
// envelope and against tampered ones: it must end "verified" on the good one only, and on every
// tampered one stop with a non-zero status before that line (a recipe that goes on after a
// mismatch and ends "Signature Verified Successfully" would teach auditors to trust a forgery).
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "attest/base64.h"
#include "attest/dsse.h"
#include "attest/keys.h"
#include "core/process.h"
#include "tests/attest/sample_receipt.h"
#include "tests/support/temp_dir.h"

namespace sealrun::attest {
namespace {

using nlohmann::json;
using sealrun::testing::read_text;
using sealrun::testing::TempDir;
using sealrun::testing::write_text;

// The ```sh block under "## Verifying by hand with openssl".
std::string recipe() {
  std::string page = read_text(std::string(SEALRUN_SOURCE_DIR) + "/docs/signing.md");
  size_t section = page.find("## Verifying by hand with openssl");
  EXPECT_NE(section, std::string::npos);
  size_t start = page.find("```sh\n", section);
  size_t end = page.find("```\n", start + 6);
  EXPECT_NE(start, std::string::npos);
  return page.substr(start + 6, end - start - 6);
}

class SigningRecipe : public ::testing::Test {
 protected:
  void SetUp() override {
    auto pair = generate_key_pair(dir_.str());
    ASSERT_TRUE(pair) << pair.error().message();
    auto key = load_signing_key(pair->key_path);
    ASSERT_TRUE(key);
    key_ = std::move(*key);
    results_ = dir_ / "sealrun-state/results/run-1";
    std::filesystem::create_directories(results_);
    receipt_ = testing::receipt_bytes(testing::sample_receipt());
    write_text(results_ + "/receipt.json", receipt_);
    auto env = sign_envelope(key_, kReceiptPayloadType, receipt_);
    ASSERT_TRUE(env);
    envelope_ = *env;
    write_text(results_ + "/receipt.dsse.json", envelope_);
  }
  Captured run_recipe() {
    SpawnOptions o;
    o.argv = {"/bin/sh", "-c", "cd \"$1\" && " + recipe(), "sh", dir_.str()};
    auto c = run_capture(o, 60 * 1000);
    EXPECT_TRUE(c) << c.error().message();
    return c ? *c : Captured{};
  }
  void expect_stops(const std::string& what) {
    auto c = run_recipe();
    EXPECT_NE(c.status.code, 0) << what << "\n" << c.out << c.err;
    EXPECT_EQ(c.out.find("verified"), std::string::npos) << what << "\n" << c.out;
    EXPECT_EQ(c.out.find("Verified Successfully"), std::string::npos) << what << "\n" << c.out;
  }
  TempDir dir_;
  SigningKey key_;
  std::string results_, receipt_, envelope_;
};

TEST_F(SigningRecipe, EndsVerifiedOnAGoodEnvelopeAndStopsAtTheFirstMismatch) {
  auto good = run_recipe();
  EXPECT_EQ(good.status.code, 0) << good.out << good.err;
  EXPECT_NE(good.out.find("verified: one signature"), std::string::npos) << good.out;

  // The receipt beside a genuine envelope was edited: the signature still holds over the payload.
  std::string edited = receipt_;
  edited.insert(edited.find("\"state\""), " ");
  write_text(results_ + "/receipt.json", edited);
  expect_stops("a receipt that is not the signed payload");
  write_text(results_ + "/receipt.json", receipt_);

  // Another key's signature over the same receipt.
  TempDir other_dir;
  auto other = generate_key_pair(other_dir.str());
  ASSERT_TRUE(other);
  auto other_key = load_signing_key(other->key_path);
  ASSERT_TRUE(other_key);
  auto forged = sign_envelope(*other_key, kReceiptPayloadType, receipt_);
  ASSERT_TRUE(forged);
  write_text(results_ + "/receipt.dsse.json", *forged);
  expect_stops("a signature by another key");

  // Two signatures, the second one ours: which is the verdict about?
  json two = json::parse(*forged);
  two["signatures"].push_back(json::parse(envelope_)["signatures"][0]);
  write_text(results_ + "/receipt.dsse.json", two.dump());
  expect_stops("two signatures");

  // Another payload type, signed as such.
  auto typed = sign_envelope(key_, kInTotoPayloadType, receipt_);
  ASSERT_TRUE(typed);
  write_text(results_ + "/receipt.dsse.json", *typed);
  expect_stops("another payload type");
}

}  // namespace
}  // namespace sealrun::attest
