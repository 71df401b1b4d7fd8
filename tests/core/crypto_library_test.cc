// SPDX-License-Identifier: Apache-2.0
// Unit tests of the run-time loading of libcrypto (core/crypto_library.h): a library that does not
// exist, one with none of the libcrypto functions (the C library) and one with all but the last of
// them each give an error naming the library and what is missing, without crashing; the real
// libcrypto resolves every function and works through the table (a known SHA-256 vector through
// fingerprint's Sha256 and attest's one-shot digest, an Ed25519 sign/verify round trip through
// attest); the process's copy is loaded once for all threads; and neither sealrun_fingerprint nor
// sealrun_attest, which this binary links, links libcrypto: it is not mapped until asked for.
#include "core/crypto_library.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "attest/keys.h"
#include "attest/openssl_util.h"
#include "fingerprint/sha256.h"
#include "tests/support/fresh_process.h"
#include "tests/support/temp_dir.h"

namespace sealrun {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(CryptoLibrary, ALibraryThatDoesNotExistIsNamed) {
  auto lib = open_crypto_library("libsealrun-no-such-library.so.3");
  ASSERT_FALSE(lib.ok());
  std::string m = lib.error().message();
  EXPECT_TRUE(contains(m, "cannot load libsealrun-no-such-library.so.3")) << m;
  EXPECT_TRUE(contains(m, "libssl3")) << m;  // says what to install
}

TEST(CryptoLibrary, ALibraryWithoutLibcryptoNamesTheFirstMissingSymbol) {
  auto lib = open_crypto_library("libc.so.6");
  ASSERT_FALSE(lib.ok());
  std::string m = lib.error().message();
  EXPECT_TRUE(contains(m, "libc.so.6 has no symbol EVP_MD_fetch")) << m;
}

TEST(CryptoLibrary, EverySymbolIsCheckedNotOnlyTheFirst) {
  // Exports all the functions but ERR_clear_error, the last (helpers/partial_libcrypto.c).
  auto lib = open_crypto_library(PARTIAL_LIBCRYPTO);
  ASSERT_FALSE(lib.ok());
  std::string m = lib.error().message();
  EXPECT_TRUE(contains(m, std::string(PARTIAL_LIBCRYPTO) + " has no symbol ERR_clear_error")) << m;
  // Only that one: had another been unchecked before it, the message would name that one.
  EXPECT_FALSE(contains(m, "EVP_MD_fetch")) << m;
}

TEST(CryptoLibrary, TheRealLibraryResolvesEveryFunction) {
  auto lib = open_crypto_library(kLibcryptoSoname);
  ASSERT_TRUE(lib.ok()) << lib.error().message();
  const CryptoApi& api = (*lib)->api();
  std::vector<std::string> unset;
#define SEALRUN_CHECK_SET(name) \
  if (api.name == nullptr) unset.push_back(#name);
  SEALRUN_CRYPTO_FUNCTIONS(SEALRUN_CHECK_SET)
#undef SEALRUN_CHECK_SET
  EXPECT_TRUE(unset.empty()) << unset.front();
}

// FIPS 180-2, appendix B.1 and B.2.
constexpr const char* kAbc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
constexpr const char* kTwoBlocks =
    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1";

TEST(CryptoLibrary, Sha256ThroughTheTableGivesTheStandardDigests) {
  EXPECT_EQ(sha256_hex("abc"), kAbc);
  Sha256 hasher;  // in pieces, and reused after finish()
  hasher.update("abcdbcdecdefdefgefghfghighijhijk");
  hasher.update("ijkljklmklmnlmnomnopnopq");
  EXPECT_EQ(hasher.finish_hex(), kTwoBlocks);
  hasher.update("abc");
  EXPECT_EQ(hasher.finish_hex(), kAbc);
  EXPECT_EQ(attest::sha256_hex_of("abc"), kAbc);
}

TEST(CryptoLibrary, AttestSignsAndVerifiesThroughTheTable) {
  sealrun::testing::TempDir tmp;
  auto pair = attest::generate_key_pair(tmp / "keys");
  ASSERT_TRUE(pair.ok()) << pair.error().message();
  auto signing = attest::load_signing_key(pair->key_path);
  ASSERT_TRUE(signing.ok()) << signing.error().message();
  auto pub = attest::load_public_key(pair->pub_path);
  ASSERT_TRUE(pub.ok()) << pub.error().message();
  EXPECT_EQ(pub->key_id(), pair->key_id);
  EXPECT_TRUE(contains(pub->pem(), "-----BEGIN PUBLIC KEY-----")) << pub->pem();
  auto sig = signing->sign("the receipt's bytes");
  ASSERT_TRUE(sig.ok()) << sig.error().message();
  EXPECT_EQ(sig->size(), attest::kEd25519SignatureBytes);
  auto good = pub->verify("the receipt's bytes", *sig);
  EXPECT_TRUE(good.ok()) << good.error().message();
  auto bad = pub->verify("the receipt's bytes, changed", *sig);
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(contains(bad.error().message(), "does not verify")) << bad.error().message();
}

TEST(CryptoLibrary, TheProcessLoadsItOnceForAllThreads) {
  std::vector<const CryptoApi*> seen(4, nullptr);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < seen.size(); ++i) {
    threads.emplace_back([&seen, i] {
      auto api = crypto_api();
      if (api.ok()) seen[i] = *api;
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_NE(seen[0], nullptr);
  for (const CryptoApi* p : seen) EXPECT_EQ(p, seen[0]);
  EXPECT_EQ(&loaded_crypto_api(), seen[0]);
}

TEST(CryptoLibrary, NotLoadedBeforeItIsAskedFor) {
  // Whether libcrypto is mapped at start can only be seen in a process where nothing has asked
  // for it yet. Four threads ask at once there, so the first load itself is raced.
  constexpr const char* kFresh = "SEALRUN_CRYPTO_FRESH_PROCESS";
  if (!sealrun::testing::in_fresh_process(kFresh)) {
    sealrun::testing::rerun_current_test_in_fresh_process(kFresh);
    return;
  }
  EXPECT_EQ(sealrun::testing::mapped_objects_named("libcrypto.so"), 0)
      << "libcrypto is mapped at start: something links it";
  std::vector<std::string> digests(4);
  std::vector<std::thread> threads;
  for (auto& d : digests) threads.emplace_back([&d] { d = sha256_hex("abc"); });
  for (auto& t : threads) t.join();
  for (const auto& d : digests) EXPECT_EQ(d, kAbc);
  EXPECT_EQ(sealrun::testing::mapped_objects_named("libcrypto.so"), 1);
}

}  // namespace
}  // namespace sealrun
