// Ledger checkpoints (attest/ledger_checkpoint.h): a checkpoint names the ledger's length and the
// SHA-256 of its last line; a ledger that only grew extends it, one truncated, rolled back (cut and
// appended to again) or rewritten does not; the file is canonical JSON or, signed, a DSSE envelope
// that verifies with the signer's key only; a broken ledger gets no checkpoint.
#include "attest/ledger_checkpoint.h"

#include <gtest/gtest.h>

#include "attest/ledger.h"
#include "attest/openssl_util.h"
#include "tests/support/temp_dir.h"

namespace sealrun::attest {
namespace {

using sealrun::testing::read_text;
using sealrun::testing::TempDir;
using sealrun::testing::write_text;

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto fd = open_state_dir(state_.str());
    ASSERT_TRUE(fd);
    dirfd_ = std::move(*fd);
  }
  void append(const std::string& id, char digest) {
    auto e = append_to_ledger(dirfd_.get(), {id, "built", std::string(64, digest), ""});
    ASSERT_TRUE(e) << e.error().message();
  }
  // The ledger's length and the SHA-256 of its line n, as the verifier computes them.
  std::optional<std::string> extends(const LedgerCheckpoint& c) {
    uint64_t lines = 0;
    std::string at_length;
    auto report = verify_ledger(dirfd_.get(), [&](const LedgerEntry& e, uint64_t n) {
      lines = n;
      if (n == c.length) at_length = sha256_hex_of(format_ledger_line(e));
    });
    EXPECT_TRUE(report);
    return ledger_extends(c, lines, at_length);
  }
  std::string path() const { return state_ / "ledger.jsonl"; }
  TempDir state_;
  TempDir keys_;
  UniqueFd dirfd_;
};

TEST_F(CheckpointTest, TruncationRollbackAndRewriteNoLongerExtendIt) {
  append("run-1", 'a');
  append("run-2", 'b');
  auto c = take_checkpoint(dirfd_.get());
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(c->length, 2u);
  std::string two = read_text(path());
  EXPECT_EQ(c->head_sha256, sha256_hex_of(two.substr(two.find('\n') + 1)));
  EXPECT_EQ(extends(*c), std::nullopt);
  append("run-3", 'c');
  EXPECT_EQ(extends(*c), std::nullopt) << "a ledger that grew still extends it";

  write_text(path(), two.substr(0, two.find('\n') + 1));
  auto cut = extends(*c);
  ASSERT_TRUE(cut);
  EXPECT_NE(cut->find("truncated"), std::string::npos) << *cut;
  append("run-4", 'd');  // rolled back and appended to: the chain is fine again
  auto report = verify_ledger(dirfd_.get());
  ASSERT_TRUE(report);
  EXPECT_TRUE(report->ok());
  auto rolled = extends(*c);
  ASSERT_TRUE(rolled);
  EXPECT_NE(rolled->find("rolled back"), std::string::npos) << *rolled;

  LedgerCheckpoint empty{0, kGenesisPrevSha256, "2026-01-02T03:04:05.678Z"};
  EXPECT_EQ(extends(empty), std::nullopt);
}

TEST_F(CheckpointTest, TheFileIsCanonicalOrASignedEnvelope) {
  append("run-1", 'a');
  auto c = take_checkpoint(dirfd_.get());
  ASSERT_TRUE(c);
  auto plain = checkpoint_file_bytes(*c, nullptr);
  ASSERT_TRUE(plain);
  EXPECT_EQ(*plain, "{\"at\":\"" + c->at + "\",\"head_sha256\":\"" + c->head_sha256 +
                        "\",\"length\":1,\"schema\":\"sealrun-ledger-checkpoint-v1\"}\n");
  write_text(keys_ / "plain.json", *plain);
  auto read = read_checkpoint(keys_ / "plain.json", nullptr);
  ASSERT_TRUE(read) << read.error().message();
  EXPECT_FALSE(read->signed_envelope);
  EXPECT_EQ(read->checkpoint.head_sha256, c->head_sha256);
  write_text(keys_ / "spaced.json", " " + *plain);
  EXPECT_FALSE(read_checkpoint(keys_ / "spaced.json", nullptr)) << "not canonical";

  auto mine = generate_key_pair(keys_ / "mine");
  auto other = generate_key_pair(keys_ / "other");
  ASSERT_TRUE(mine && other);
  auto key = load_signing_key(mine->key_path);
  ASSERT_TRUE(key);
  auto envelope = checkpoint_file_bytes(*c, &*key);
  ASSERT_TRUE(envelope);
  write_text(keys_ / "signed.json", *envelope);
  auto pub = load_public_key(mine->pub_path);
  auto other_pub = load_public_key(other->pub_path);
  ASSERT_TRUE(pub && other_pub);
  auto good = read_checkpoint(keys_ / "signed.json", &*pub);
  ASSERT_TRUE(good) << good.error().message();
  EXPECT_TRUE(good->signed_envelope);
  EXPECT_EQ(good->key_id, key->key_id());
  EXPECT_EQ(good->checkpoint.length, 1u);
  EXPECT_FALSE(read_checkpoint(keys_ / "signed.json", &*other_pub)) << "another key";
  auto unchecked = read_checkpoint(keys_ / "signed.json", nullptr);
  ASSERT_TRUE(unchecked);
  EXPECT_FALSE(unchecked->key_id);
}

TEST_F(CheckpointTest, ABrokenOrMissingLedgerGetsNoCheckpoint) {
  EXPECT_FALSE(take_checkpoint(dirfd_.get())) << "no ledger yet";
  append("run-1", 'a');
  append("run-2", 'b');
  std::string text = read_text(path());
  write_text(path(), text.substr(text.find('\n') + 1));  // line 1 deleted
  auto c = take_checkpoint(dirfd_.get());
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message().find("does not verify"), std::string::npos) << c.error().message();
}

}  // namespace
}  // namespace sealrun::attest
