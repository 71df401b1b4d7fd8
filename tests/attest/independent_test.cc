// SPDX-License-Identifier: Apache-2.0
// Independent verification (issue 11, "Proof"): sealrun's envelopes and statements checked by code
// not written here — openssl(1) over PAE bytes built in Python, securesystemslib (libsodium) and
// python3-cryptography over the envelope, the key id recomputed by openssl + sha256sum, and the
// statement checked against the in-toto / SLSA field rules (check_statement.py, written from the
// specs). Each check is also shown to fail on a tampered input, so none of them can pass vacuously.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "attest/base64.h"
#include "attest/dsse.h"
#include "attest/provenance.h"
#include "core/process.h"
#include "tests/attest/sample_receipt.h"
#include "tests/support/temp_dir.h"

namespace sealrun::attest {
namespace {

using nlohmann::json;
using sealrun::testing::read_text;
using sealrun::testing::TempDir;
using sealrun::testing::write_text;

const std::string kScripts = SEALRUN_ATTEST_TEST_DIR;
const char kPython[] = "/usr/bin/python3";  // Debian's modules live under its interpreter

Captured run(std::vector<std::string> argv) {
  SpawnOptions o;
  o.argv = std::move(argv);
  auto c = run_capture(o, 60 * 1000);
  EXPECT_TRUE(c) << c.error().message();
  return c ? *c : Captured{};
}

std::string openssl() {
  auto p = find_program("openssl");
  EXPECT_TRUE(p) << "openssl(1) is in .ci/packages.txt";
  return p ? *p : "openssl";
}

class Independent : public ::testing::Test {
 protected:
  void SetUp() override {
    auto pair = generate_key_pair(dir_.str());
    ASSERT_TRUE(pair) << pair.error().message();
    key_id_ = pair->key_id;
    auto key = load_signing_key(pair->key_path);
    ASSERT_TRUE(key);
    key_ = std::move(*key);
    receipt_ = testing::receipt_bytes(testing::sample_receipt());
    write_text(dir_ / "receipt.json", receipt_);
    auto env = sign_envelope(key_, kReceiptPayloadType, receipt_);
    ASSERT_TRUE(env);
    write_text(dir_ / "receipt.dsse.json", *env);
  }
  Captured verify_dsse(const std::string& envelope, const std::string& pub, const char* type,
                       std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {kPython, kScripts + "/verify_dsse.py", envelope, pub, type};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return run(argv);
  }
  Captured check_statement(const std::string& path) {
    return run({kPython, kScripts + "/check_statement.py", path, "--require-uri-and-digest"});
  }
  TempDir dir_;
  std::string key_id_;
  SigningKey key_;
  std::string receipt_;
};

TEST_F(Independent, OpensslVerifiesTheSignatureOverPaeBuiltInPython) {
  auto py = verify_dsse(dir_ / "receipt.dsse.json", dir_ / "sealrun.pub", kReceiptPayloadType,
                        {"--write-pae", dir_ / "pae.bin", "--write-sig", dir_ / "sig.bin",
                         "--write-payload", dir_ / "payload.bin"});
  ASSERT_TRUE(py.status.success()) << py.err;
  // The payload is the receipt's exact bytes.
  EXPECT_EQ(read_text(dir_ / "payload.bin"), receipt_);
  auto ok = run({openssl(), "pkeyutl", "-verify", "-rawin", "-pubin", "-inkey",
                 dir_ / "sealrun.pub", "-sigfile", dir_ / "sig.bin", "-in", dir_ / "pae.bin"});
  EXPECT_TRUE(ok.status.success()) << ok.out << ok.err;
  EXPECT_NE(ok.out.find("Signature Verified Successfully"), std::string::npos) << ok.out;

  // One changed byte of the signed bytes: openssl refuses.
  std::string pae_bytes = read_text(dir_ / "pae.bin");
  pae_bytes[pae_bytes.size() - 5] ^= 1;
  write_text(dir_ / "pae-edited.bin", pae_bytes);
  auto bad =
      run({openssl(), "pkeyutl", "-verify", "-rawin", "-pubin", "-inkey", dir_ / "sealrun.pub",
           "-sigfile", dir_ / "sig.bin", "-in", dir_ / "pae-edited.bin"});
  EXPECT_FALSE(bad.status.success()) << bad.out;
}

TEST_F(Independent, SecuresystemslibAndCryptographyVerifyTheEnvelope) {
  auto ok = verify_dsse(dir_ / "receipt.dsse.json", dir_ / "sealrun.pub", kReceiptPayloadType);
  ASSERT_TRUE(ok.status.success()) << ok.err;
  EXPECT_NE(ok.out.find("keyid " + key_id_), std::string::npos) << ok.out;

  // An edited payload fails there too.
  auto doc = json::parse(read_text(dir_ / "receipt.dsse.json"));
  std::string forged = receipt_;
  forged.replace(forged.find("\"state\": \"built\""), 16, "\"state\": \"built\" ");
  doc["payload"] = base64_encode(forged);
  write_text(dir_ / "forged.dsse.json", doc.dump());
  auto forged_run =
      verify_dsse(dir_ / "forged.dsse.json", dir_ / "sealrun.pub", kReceiptPayloadType);
  EXPECT_FALSE(forged_run.status.success());
  EXPECT_NE(forged_run.err.find("securesystemslib"), std::string::npos) << forged_run.err;

  // Another key's public half does not verify it.
  TempDir other;
  ASSERT_TRUE(generate_key_pair(other.str()));
  auto wrong_key =
      verify_dsse(dir_ / "receipt.dsse.json", other / "sealrun.pub", kReceiptPayloadType);
  EXPECT_FALSE(wrong_key.status.success()) << wrong_key.out;
}

TEST_F(Independent, KeyIdIsTheSha256OfTheDerPublicKey) {
  auto c = run({"/bin/sh", "-c",
                "\"$0\" pkey -pubin -in \"$1\" -outform DER | sha256sum | cut -d' ' -f1", openssl(),
                dir_ / "sealrun.pub"});
  ASSERT_TRUE(c.status.success()) << c.err;
  EXPECT_EQ(c.out, key_id_ + "\n");
  // And openssl reads the private key as an Ed25519 PKCS#8 key.
  auto text = run({openssl(), "pkey", "-in", dir_ / "sealrun.key", "-noout", "-text"});
  ASSERT_TRUE(text.status.success()) << text.err;
  EXPECT_NE(text.out.find("ED25519 Private-Key"), std::string::npos) << text.out;
}

TEST_F(Independent, ExportedStatementsPassTheSpecChecks) {
  auto built = export_statement(receipt_, {});
  ASSERT_TRUE(built) << built.error().message();
  write_text(dir_ / "built.intoto.json", *built);
  auto c = check_statement(dir_ / "built.intoto.json");
  EXPECT_TRUE(c.status.success()) << c.err;

  json failed = testing::sample_receipt();
  failed["state"] = "failed";
  failed["exit"] = 5;
  failed["reason"] = "exit 1";
  auto with_failed = export_statement(testing::receipt_bytes(failed), {true});
  ASSERT_TRUE(with_failed);
  write_text(dir_ / "failed.intoto.json", *with_failed);
  auto f = check_statement(dir_ / "failed.intoto.json");
  EXPECT_TRUE(f.status.success()) << f.err;
}

TEST_F(Independent, SignedStatementVerifiesAndItsPayloadPassesTheSpecChecks) {
  auto env = export_signed_statement(receipt_, {}, key_);
  ASSERT_TRUE(env);
  write_text(dir_ / "statement.dsse.json", *env);
  auto v = verify_dsse(dir_ / "statement.dsse.json", dir_ / "sealrun.pub", kInTotoPayloadType,
                       {"--write-payload", dir_ / "statement.json", "--write-pae",
                        dir_ / "spae.bin", "--write-sig", dir_ / "ssig.bin"});
  ASSERT_TRUE(v.status.success()) << v.err;
  auto c = check_statement(dir_ / "statement.json");
  EXPECT_TRUE(c.status.success()) << c.err;
  auto o = run({openssl(), "pkeyutl", "-verify", "-rawin", "-pubin", "-inkey", dir_ / "sealrun.pub",
                "-sigfile", dir_ / "ssig.bin", "-in", dir_ / "spae.bin"});
  EXPECT_TRUE(o.status.success()) << o.out << o.err;
  // The receipt type is not the statement type: the independent verifier refuses the mix-up too.
  EXPECT_FALSE(verify_dsse(dir_ / "statement.dsse.json", dir_ / "sealrun.pub", kReceiptPayloadType)
                   .status.success());
}

TEST_F(Independent, TheSpecChecksCatchBrokenStatements) {
  json good = json::parse(*export_statement(receipt_, {}));
  struct Case {
    const char* why;  // expected in the checker's stderr
    void (*edit)(json&);
  };
  const Case cases[] = {
      {"needs both uri and digest",
       [](json& s) {
         s["predicate"]["buildDefinition"]["resolvedDependencies"][0].erase("digest");
       }},
      {"MUST specify one of uri, digest or content",
       [](json& s) {
         auto& d = s["predicate"]["buildDefinition"]["resolvedDependencies"][1];
         d.erase("digest");
         d.erase("uri");
       }},
      {"builder.id: 'sealrun' has no lower-case scheme",
       [](json& s) { s["predicate"]["runDetails"]["builder"]["id"] = "sealrun"; }},
      {"subject: a non-empty array", [](json& s) { s["subject"] = json::array(); }},
      {"a subject MUST have digest set", [](json& s) { s["subject"][0].erase("digest"); }},
      {"sha256: expected 64 lower-case hex",
       [](json& s) { s["subject"][0]["digest"]["sha256"] = "ABC"; }},
      {"startedOn: expected an RFC 3339 timestamp in UTC",
       [](json& s) { s["predicate"]["runDetails"]["metadata"]["startedOn"] = "2026-01-02 03:04"; }},
      {"externalParameters: required object missing",
       [](json& s) { s["predicate"]["buildDefinition"].erase("externalParameters"); }},
      {"_type: must be", [](json& s) { s["_type"] = "https://in-toto.io/Statement/v0.1"; }},
      {"neither a SLSA field", [](json& s) { s["predicate"]["runDetails"]["extra"] = 1; }},
  };
  for (const auto& c : cases) {
    json s = good;
    c.edit(s);
    write_text(dir_ / "broken.json", s.dump());
    auto r = check_statement(dir_ / "broken.json");
    EXPECT_FALSE(r.status.success()) << c.why;
    EXPECT_NE(r.err.find(c.why), std::string::npos) << c.why << " -> " << r.err;
  }
}

}  // namespace
}  // namespace sealrun::attest
