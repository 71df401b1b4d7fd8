// SPDX-License-Identifier: Apache-2.0
// Sha256 against the NIST FIPS 180-2 known answers, fed whole and in pieces, and reused.
#include "fingerprint/sha256.h"

#include <gtest/gtest.h>

#include <string>

namespace sealrun {
namespace {

struct Kat {
  std::string message;
  const char* digest;
};

std::vector<Kat> nist_vectors() {
  return {
      {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
      {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
      {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
      {std::string(1000000, 'a'),
       "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"},
  };
}

TEST(Sha256, NistKnownAnswersOneShot) {
  for (const Kat& kat : nist_vectors()) {
    EXPECT_EQ(sha256_hex(kat.message), kat.digest) << "message of " << kat.message.size();
  }
}

TEST(Sha256, NistKnownAnswersFedInOddPieces) {
  for (const Kat& kat : nist_vectors()) {
    Sha256 h;
    size_t step = 1;
    for (size_t i = 0; i < kat.message.size(); i += step, step = step * 3 % 997 + 1)
      h.update(std::string_view(kat.message).substr(i, step));
    EXPECT_EQ(h.finish_hex(), kat.digest) << "message of " << kat.message.size();
  }
}

TEST(Sha256, ContextIsReusableAfterFinish) {
  Sha256 h;
  h.update("abc");
  EXPECT_EQ(h.finish_hex(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(h.finish_hex(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  h.update("a");
  h.update("bc");
  auto raw = h.finish();
  EXPECT_EQ(raw[0], 0xba);
  EXPECT_EQ(raw[31], 0xad);
}

TEST(Sha256, MovedContextKeepsItsState) {
  Sha256 a;
  a.update("ab");
  Sha256 b = std::move(a);
  b.update("c");
  EXPECT_EQ(b.finish_hex(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

}  // namespace
}  // namespace sealrun
