// SPDX-License-Identifier: Apache-2.0
// Keys: generation (modes, refusal to overwrite), sign/verify round trips, and every key file a
// signer must refuse — each refusal naming the file and the problem (issue 11, "Bad input").
#include "attest/keys.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "attest/key_file.h"
#include "tests/support/temp_dir.h"

namespace sealrun::attest {
namespace {

using sealrun::testing::read_text;
using sealrun::testing::TempDir;
using sealrun::testing::write_text;

mode_t mode_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

void write_mode(const std::string& path, const std::string& text, mode_t mode) {
  write_text(path, text);
  ASSERT_EQ(::chmod(path.c_str(), mode), 0);
}

// A PEM private key of another algorithm, made with libcrypto directly.
std::string foreign_private_pem(const char* type) {
  EVP_PKEY* pkey = std::string_view(type) == "RSA"
                       ? EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", static_cast<size_t>(2048))
                       : EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
  EXPECT_NE(pkey, nullptr);
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, pkey, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  long len = BIO_get_mem_data(bio, &data);  // NOLINT(google-runtime-int)
  std::string out(data, static_cast<size_t>(len));
  BIO_free(bio);
  EVP_PKEY_free(pkey);
  return out;
}

void expect_refused(const Result<SigningKey>& r, const std::string& path, const std::string& why) {
  ASSERT_FALSE(r) << path << " was accepted";
  const std::string m = r.error().message();
  EXPECT_NE(m.find(path), std::string::npos) << "message does not name the file: " << m;
  EXPECT_NE(m.find(why), std::string::npos) << "expected \"" << why << "\" in: " << m;
}

TEST(Keys, GenerateWritesPairWithModesAndMatchingId) {
  TempDir tmp;
  std::string dir = tmp / "keys";  // created by generate
  auto pair = generate_key_pair(dir);
  ASSERT_TRUE(pair) << pair.error().message();
  EXPECT_EQ(pair->key_path, dir + "/sealrun.key");
  EXPECT_EQ(pair->pub_path, dir + "/sealrun.pub");
  EXPECT_EQ(mode_of(dir), 0700u);
  EXPECT_EQ(mode_of(pair->key_path), 0600u);
  EXPECT_EQ(mode_of(pair->pub_path), 0644u);
  EXPECT_EQ(read_text(pair->key_path).rfind("-----BEGIN PRIVATE KEY-----\n", 0), 0u);
  EXPECT_EQ(read_text(pair->pub_path).rfind("-----BEGIN PUBLIC KEY-----\n", 0), 0u);
  EXPECT_EQ(pair->key_id.size(), 64u);
  // No temporary left behind.
  size_t entries = 0;
  for ([[maybe_unused]] auto& e : std::filesystem::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 2u);

  auto key = load_signing_key(pair->key_path);
  ASSERT_TRUE(key) << key.error().message();
  auto pub = load_public_key(pair->pub_path);
  ASSERT_TRUE(pub) << pub.error().message();
  EXPECT_EQ(key->key_id(), pair->key_id);
  EXPECT_EQ(pub->key_id(), pair->key_id);
  EXPECT_EQ(pub->pem(), read_text(pair->pub_path));
  // The public half can also be read from the private key file.
  auto derived = load_public_key(pair->key_path);
  ASSERT_TRUE(derived);
  EXPECT_EQ(derived->key_id(), pair->key_id);
}

TEST(Keys, SignAndVerifyRoundTrip) {
  TempDir tmp;
  ASSERT_TRUE(generate_key_pair(tmp.str()));
  auto key = load_signing_key(tmp / "sealrun.key");
  auto pub = load_public_key(tmp / "sealrun.pub");
  ASSERT_TRUE(key && pub);
  auto sig = key->sign("message");
  ASSERT_TRUE(sig);
  EXPECT_EQ(sig->size(), 64u);
  EXPECT_TRUE(pub->verify("message", *sig));
  auto wrong = pub->verify("messagE", *sig);
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message().find("does not verify with key " + pub->key_id()),
            std::string::npos);
  std::string flipped = *sig;
  flipped[10] ^= 1;
  EXPECT_FALSE(pub->verify("message", flipped));
  EXPECT_FALSE(pub->verify("message", sig->substr(0, 63)));
}

TEST(Keys, TwoKeysHaveDifferentIdsAndDoNotCrossVerify) {
  TempDir a, b;
  ASSERT_TRUE(generate_key_pair(a.str()));
  ASSERT_TRUE(generate_key_pair(b.str()));
  auto ka = load_signing_key(a / "sealrun.key");
  auto pb = load_public_key(b / "sealrun.pub");
  ASSERT_TRUE(ka && pb);
  EXPECT_NE(ka->key_id(), pb->key_id());
  EXPECT_FALSE(pb->verify("m", *ka->sign("m")));
}

TEST(Keys, GenerateNeverOverwrites) {
  TempDir tmp;
  ASSERT_TRUE(generate_key_pair(tmp.str()));
  std::string before = read_text(tmp / "sealrun.key");
  auto again = generate_key_pair(tmp.str());
  ASSERT_FALSE(again);
  EXPECT_NE(again.error().message().find("sealrun.key: already exists"), std::string::npos)
      << again.error().message();
  EXPECT_EQ(read_text(tmp / "sealrun.key"), before);

  // Only the public file present (or a dangling symlink in its place) is refused too.
  TempDir other;
  write_text(other / "sealrun.pub", "x");
  EXPECT_FALSE(generate_key_pair(other.str()));
  EXPECT_EQ(read_text(other / "sealrun.pub"), "x");
  EXPECT_FALSE(std::filesystem::exists(other / "sealrun.key"));
  TempDir dangling;
  ASSERT_EQ(::symlink("/nonexistent", (dangling / "sealrun.key").c_str()), 0);
  EXPECT_FALSE(generate_key_pair(dangling.str()));
}

TEST(Keys, GenerateRefusesMissingParent) {
  TempDir tmp;
  auto r = generate_key_pair(tmp / "no/such/dir");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("no/such/dir"), std::string::npos);
}

class KeyFileRefusal : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(generate_key_pair(tmp_.str()));
    key_text_ = read_text(tmp_ / "sealrun.key");
    pub_text_ = read_text(tmp_ / "sealrun.pub");
  }
  TempDir tmp_;
  std::string key_text_, pub_text_;
};

TEST_F(KeyFileRefusal, ReadableOrWritableByOthers) {
  for (mode_t mode : {0644, 0640, 0604, 0620, 0602, 0660}) {
    std::string path = tmp_ / "loose.key";
    write_mode(path, key_text_, mode);
    expect_refused(load_signing_key(path), path, "readable or writable by group or others");
  }
  // 0400 (read-only for the owner) is fine.
  std::string ro = tmp_ / "ro.key";
  write_mode(ro, key_text_, 0400);
  EXPECT_TRUE(load_signing_key(ro));
}

TEST_F(KeyFileRefusal, OwnedBySomeoneElse) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to chown a file to another user";
  std::string path = tmp_ / "theirs.key";
  write_mode(path, key_text_, 0600);
  ASSERT_EQ(::chown(path.c_str(), 4242, 4242), 0);
  expect_refused(load_signing_key(path), path, "owned by uid 4242");
}

TEST_F(KeyFileRefusal, SymlinkFifoDirectoryAndOversize) {
  std::string link = tmp_ / "link.key";
  ASSERT_EQ(::symlink((tmp_ / "sealrun.key").c_str(), link.c_str()), 0);
  expect_refused(load_signing_key(link), link, "is a symlink");

  std::string fifo = tmp_ / "fifo.key";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_refused(load_signing_key(fifo), fifo, "a FIFO");  // and it did not block

  std::string dir = tmp_ / "dir.key";
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  expect_refused(load_signing_key(dir), dir, "a directory");

  std::string big = tmp_ / "big.key";
  write_mode(big, key_text_ + std::string(70 * 1024, '\n'), 0600);
  expect_refused(load_signing_key(big), big, "a key file is at most 65536 bytes");
}

TEST_F(KeyFileRefusal, PublicKeyWhereAPrivateOneIsNeeded) {
  std::string path = tmp_ / "sealrun.pub";
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  expect_refused(load_signing_key(path), path, "holds a public key; signing needs the private key");
}

TEST_F(KeyFileRefusal, OtherAlgorithms) {
  for (const char* type : {"RSA", "EC"}) {
    std::string path = tmp_ / (std::string(type) + ".key");
    write_mode(path, foreign_private_pem(type), 0600);
    expect_refused(load_signing_key(path), path,
                   std::string("is an ") + type + " key; sealrun signs and verifies with Ed25519");
    // And a verifier refuses its public half.
    auto pub = load_public_key(path);
    ASSERT_FALSE(pub);
    EXPECT_NE(pub.error().message().find("Ed25519 only"), std::string::npos);
  }
}

TEST_F(KeyFileRefusal, GarbageAndOtherPemBlocks) {
  const std::pair<std::string, const char*> cases[] = {
      {"not a key at all\n", "not a PEM key file"},
      {"", "not a PEM key file"},
      {"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
       "not a readable private key"},
      {"-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n",
       "passphrase-encrypted"},
      {"-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n",
       "OpenSSH-format"},
      {"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
       "PEM \"CERTIFICATE\" block, not a key"},
      {key_text_ + key_text_, "more than one PEM block"},
      {std::string("-----BEGIN PRIVATE KEY-----\n\xff\xfe\x00\x01", 32),
       "not a readable private key"},
  };
  int i = 0;
  for (const auto& [text, why] : cases) {
    std::string path = tmp_ / ("garbage" + std::to_string(i++) + ".key");
    write_mode(path, text, 0600);
    expect_refused(load_signing_key(path), path, why);
  }
}

TEST_F(KeyFileRefusal, MissingFileNamesIt) {
  std::string path = tmp_ / "absent.key";
  expect_refused(load_signing_key(path), path, "No such file");
}

TEST_F(KeyFileRefusal, BeneathStateDirectoryRefusesSymlinkedDirectory) {
  // STATE/keys -> elsewhere: the default key is looked up below the state dir without following.
  TempDir state;
  ASSERT_EQ(::symlink(tmp_.str().c_str(), (state / "keys").c_str()), 0);
  UniqueFd dirfd(::open(state.str().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(dirfd);
  auto via_link = load_signing_key_at(dirfd.get(), "keys/sealrun.key", "STATE/keys/sealrun.key");
  ASSERT_FALSE(via_link);
  EXPECT_NE(via_link.error().message().find("STATE/keys/sealrun.key"), std::string::npos);
  EXPECT_NE(via_link.error().message().find("symlink"), std::string::npos)
      << via_link.error().message();

  // A real directory works.
  ASSERT_EQ(::unlink((state / "keys").c_str()), 0);
  ASSERT_TRUE(generate_key_pair(state / "keys"));
  auto real = load_signing_key_at(dirfd.get(), kDefaultKeyInState, "STATE/keys/sealrun.key");
  ASSERT_TRUE(real) << real.error().message();
  // "../" is refused beneath the state directory.
  EXPECT_FALSE(load_signing_key_at(dirfd.get(), "../x/sealrun.key", "x"));
}

}  // namespace
}  // namespace sealrun::attest
