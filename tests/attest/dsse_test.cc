// SPDX-License-Identifier: Apache-2.0
// DSSE: PAE against the spec's test vector, sign/verify round trips, and every envelope a verifier
// must refuse: a forged or edited payload, a re-signed envelope, two signatures or none, a wrong
// payloadType, bad base64, unknown or duplicate keys, a 1 GiB file, a FIFO, a symlink.
#include "attest/dsse.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "attest/base64.h"
#include "core/unique_fd.h"
#include "tests/support/temp_dir.h"

namespace sealrun::attest {
namespace {

using nlohmann::json;
using sealrun::testing::TempDir;
using sealrun::testing::write_text;

struct Signer {
  TempDir dir;
  SigningKey key;
  PublicKey pub;
};

std::unique_ptr<Signer> make_signer() {
  auto s = std::make_unique<Signer>();
  EXPECT_TRUE(generate_key_pair(s->dir.str()));
  auto key = load_signing_key(s->dir / "sealrun.key");
  auto pub = load_public_key(s->dir / "sealrun.pub");
  EXPECT_TRUE(key && pub);
  s->key = std::move(*key);
  s->pub = *pub;
  return s;
}

const std::string kReceipt = R"({"id":"r1","state":"built","exit":0})"
                             "\n";

Result<VerifiedPayload> parse_and_verify(const std::string& text, const PublicKey& pub,
                                         std::string_view type = kReceiptPayloadType) {
  auto env = parse_envelope(text, "envelope");
  if (!env) return std::move(env).error();
  return verify_envelope(*env, pub, type);
}

std::string message_of(const Result<VerifiedPayload>& r) {
  return r ? std::string("(verified)") : r.error().message();
}

TEST(Dsse, PaeMatchesTheSpecTestVector) {
  EXPECT_EQ(pae("http://example.com/HelloWorld", "hello world"),
            "DSSEv1 29 http://example.com/HelloWorld 11 hello world");
  EXPECT_EQ(pae("", ""), "DSSEv1 0  0 ");
  std::string with_nul("a\0b", 3);
  EXPECT_EQ(pae("t", with_nul), std::string("DSSEv1 1 t 3 a\0b", 16));
}

TEST(Dsse, SignThenVerifyRoundTrip) {
  auto s = make_signer();
  auto text = sign_envelope(s->key, kReceiptPayloadType, kReceipt);
  ASSERT_TRUE(text) << text.error().message();
  auto doc = json::parse(*text);
  EXPECT_EQ(doc["payloadType"], kReceiptPayloadType);
  EXPECT_EQ(doc["payload"], base64_encode(kReceipt));
  ASSERT_EQ(doc["signatures"].size(), 1u);
  EXPECT_EQ(doc["signatures"][0]["keyid"], s->pub.key_id());
  auto ok = parse_and_verify(*text, s->pub);
  ASSERT_TRUE(ok) << ok.error().message();
  EXPECT_EQ(ok->payload, kReceipt);
  EXPECT_EQ(ok->key_id, s->pub.key_id());
}

TEST(Dsse, ForgedPayloadFails) {
  // The issue's forgery: edit the receipt (state, exit), keep the old signature.
  auto s = make_signer();
  auto doc = json::parse(*sign_envelope(s->key, kReceiptPayloadType, kReceipt));
  std::string forged = R"({"id":"r1","state":"built","exit":0,"outputs":[1]})"
                       "\n";
  doc["payload"] = base64_encode(forged);
  auto r = parse_and_verify(doc.dump(), s->pub);
  ASSERT_FALSE(r);
  EXPECT_NE(message_of(r).find("does not verify with key"), std::string::npos) << message_of(r);
}

TEST(Dsse, EditedPayloadByOneByteFails) {
  auto s = make_signer();
  auto doc = json::parse(*sign_envelope(s->key, kReceiptPayloadType, kReceipt));
  std::string edited = kReceipt;
  edited[edited.size() - 3] = '1';  // "exit":0 -> "exit":1
  doc["payload"] = base64_encode(edited);
  EXPECT_FALSE(parse_and_verify(doc.dump(), s->pub));
}

TEST(Dsse, ChangedPayloadTypeFailsEvenWhenExpectedTypeIsNotChecked) {
  auto s = make_signer();
  auto doc = json::parse(*sign_envelope(s->key, kReceiptPayloadType, kReceipt));
  doc["payloadType"] = kInTotoPayloadType;
  // The type is inside the PAE: changing it breaks the signature...
  EXPECT_FALSE(parse_and_verify(doc.dump(), s->pub, ""));
  // ...and a correctly signed envelope of another type is refused when a type is expected.
  auto other = sign_envelope(s->key, kInTotoPayloadType, "{}");
  auto r = parse_and_verify(*other, s->pub, kReceiptPayloadType);
  ASSERT_FALSE(r);
  EXPECT_NE(message_of(r).find("payloadType is \"application/vnd.in-toto+json\"; expected "
                               "\"application/vnd.sealrun.receipt+json\""),
            std::string::npos)
      << message_of(r);
}

TEST(Dsse, ResignedWithAnotherKeyFails) {
  auto ours = make_signer();
  auto theirs = make_signer();
  std::string forged = R"({"id":"r1","state":"built","exit":0,"forged":true})";
  auto text = sign_envelope(theirs->key, kReceiptPayloadType, forged);
  auto r = parse_and_verify(*text, ours->pub);
  ASSERT_FALSE(r);
  EXPECT_NE(message_of(r).find("signed by key " + theirs->pub.key_id() + ", not by the given key"),
            std::string::npos)
      << message_of(r);
  // Dropping the keyid (or setting it to ours) does not help: the signature itself fails.
  auto doc = json::parse(*text);
  doc["signatures"][0].erase("keyid");
  EXPECT_NE(message_of(parse_and_verify(doc.dump(), ours->pub)).find("does not verify"),
            std::string::npos);
  doc["signatures"][0]["keyid"] = ours->pub.key_id();
  EXPECT_FALSE(parse_and_verify(doc.dump(), ours->pub));
}

TEST(Dsse, TwoSignaturesOrNoneAreRefused) {
  auto s = make_signer();
  auto other = make_signer();
  auto doc = json::parse(*sign_envelope(s->key, kReceiptPayloadType, kReceipt));
  auto second = json::parse(*sign_envelope(other->key, kReceiptPayloadType, kReceipt));
  json two = doc;
  two["signatures"].push_back(second["signatures"][0]);
  auto r2 = parse_and_verify(two.dump(), s->pub);
  ASSERT_FALSE(r2);
  EXPECT_NE(message_of(r2).find("has 2 signatures"), std::string::npos) << message_of(r2);
  // Even two copies of one valid signature.
  json same = doc;
  same["signatures"].push_back(doc["signatures"][0]);
  EXPECT_FALSE(parse_and_verify(same.dump(), s->pub));
  json none = doc;
  none["signatures"] = json::array();
  auto r0 = parse_and_verify(none.dump(), s->pub);
  ASSERT_FALSE(r0);
  EXPECT_NE(message_of(r0).find("has no signature"), std::string::npos) << message_of(r0);
}

TEST(Dsse, UrlSafeUnpaddedBase64IsAccepted) {
  // DSSE: verifiers MUST accept either alphabet.
  auto s = make_signer();
  auto doc = json::parse(*sign_envelope(s->key, kReceiptPayloadType, kReceipt));
  for (const char* field : {"payload"}) {
    std::string v = doc[field];
    for (char& c : v) c = c == '+' ? '-' : c == '/' ? '_' : c;
    while (!v.empty() && v.back() == '=') v.pop_back();
    doc[field] = v;
  }
  std::string sig = doc["signatures"][0]["sig"];
  for (char& c : sig) c = c == '+' ? '-' : c == '/' ? '_' : c;
  doc["signatures"][0]["sig"] = sig;
  EXPECT_TRUE(parse_and_verify(doc.dump(), s->pub))
      << message_of(parse_and_verify(doc.dump(), s->pub));
}

TEST(Dsse, MalformedEnvelopesAreRefusedWithTheirPlace) {
  auto s = make_signer();
  auto good = json::parse(*sign_envelope(s->key, kReceiptPayloadType, kReceipt));
  struct Case {
    const char* name;
    std::string text;
    const char* why;
  };
  auto with = [&](auto edit) {
    json d = good;
    edit(d);
    return d.dump();
  };
  const Case cases[] = {
      {"not json", "{", "not a DSSE envelope"},
      {"array", "[]", "not an object"},
      {"bad payload base64", with([](json& d) { d["payload"] = "e30=\n"; }),
       "envelope.payload: bad base64"},
      {"bad sig base64", with([](json& d) { d["signatures"][0]["sig"] = "!!!!"; }),
       "envelope.signatures[0].sig: bad base64"},
      {"payload not a string", with([](json& d) { d["payload"] = 5; }),
       "envelope.payload: expected a string"},
      {"missing payloadType", with([](json& d) { d.erase("payloadType"); }),
       "missing \"payloadType\""},
      {"empty payloadType", with([](json& d) { d["payloadType"] = ""; }), "payloadType: must be"},
      {"unknown key", with([](json& d) { d["extra"] = 1; }), "unknown key \"extra\""},
      {"unknown signature key", with([](json& d) { d["signatures"][0]["cert"] = "x"; }),
       "unknown key \"cert\""},
      {"signatures not an array", with([](json& d) { d["signatures"] = json::object(); }),
       "signatures: expected an array"},
      {"duplicate key", R"({"payload":"e30=","payload":"e30=","payloadType":"x","signatures":[]})",
       "duplicate"},
      {"too many signatures", with([&](json& d) {
         for (int i = 0; i < 20; ++i) d["signatures"].push_back(good["signatures"][0]);
       }),
       "over the limit of 16"},
  };
  for (const auto& c : cases) {
    auto r = parse_envelope(c.text, "envelope");
    ASSERT_FALSE(r) << c.name;
    EXPECT_NE(r.error().message().find(c.why), std::string::npos)
        << c.name << ": " << r.error().message();
  }
}

TEST(Dsse, OversizedPayloadIsRefused) {
  std::string big = R"({"payloadType":"t","signatures":[],"payload":")" +
                    std::string((kMaxPayloadBytes / 3 + 10) * 4, 'A') + "\"}";
  auto r = parse_envelope(big, "envelope");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("over the limit of 4194304 bytes"), std::string::npos)
      << r.error().message();
}

TEST(Dsse, FilesThatAreNotSmallRegularFilesAreRefusedUnread) {
  TempDir tmp;
  // A 1 GiB (sparse) envelope: refused from its size; reading it would take seconds.
  std::string huge = tmp / "huge.dsse.json";
  {
    UniqueFd fd(::open(huge.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
    ASSERT_TRUE(fd);
    ASSERT_EQ(::ftruncate(fd.get(), off_t{1} << 30), 0);
  }
  auto r = read_envelope_file(AT_FDCWD, huge);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("huge.dsse.json: is 1073741824 bytes, over the limit"),
            std::string::npos)
      << r.error().message();

  std::string fifo = tmp / "fifo.dsse.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  auto rf = read_envelope_file(AT_FDCWD, fifo);  // must not block waiting for a writer
  ASSERT_FALSE(rf);
  EXPECT_NE(rf.error().message().find("a FIFO"), std::string::npos) << rf.error().message();

  auto s = make_signer();
  std::string real = tmp / "real.dsse.json";
  write_text(real, *sign_envelope(s->key, kReceiptPayloadType, kReceipt));
  std::string link = tmp / "link.dsse.json";
  ASSERT_EQ(::symlink(real.c_str(), link.c_str()), 0);
  auto rl = read_envelope_file(AT_FDCWD, link);
  ASSERT_FALSE(rl);
  EXPECT_NE(rl.error().message().find("symlink"), std::string::npos) << rl.error().message();
  auto ok = read_envelope_file(AT_FDCWD, real);
  ASSERT_TRUE(ok) << ok.error().message();
  EXPECT_TRUE(verify_envelope(*ok, s->pub, kReceiptPayloadType));
}

TEST(Dsse, ReceiptEnvelopeMustCarryTheReceiptsExactBytes) {
  auto s = make_signer();
  auto text = sign_receipt(s->key, kReceipt);
  ASSERT_TRUE(text);
  auto env = parse_envelope(*text, "envelope");
  ASSERT_TRUE(env);
  EXPECT_TRUE(verify_receipt_envelope(*env, s->pub, kReceipt));
  // The receipt file was edited after signing (the envelope itself is untouched and valid).
  std::string edited = kReceipt;
  edited.insert(edited.size() - 1, " ");
  auto r = verify_receipt_envelope(*env, s->pub, edited);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("its payload is not this receipt (37 bytes signed, 38 bytes "
                                     "in the receipt file, first difference at byte 36)"),
            std::string::npos)
      << r.error().message();
  // A statement envelope is not a receipt envelope.
  auto statement = parse_envelope(*sign_envelope(s->key, kInTotoPayloadType, kReceipt), "e");
  EXPECT_FALSE(verify_receipt_envelope(*statement, s->pub, kReceipt));
}

}  // namespace
}  // namespace sealrun::attest
