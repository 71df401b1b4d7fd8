// A verify that nothing fools (issue 27 item 4), through the built binary and real runs:
// ACCEPTANCE 41 (a signed receipt replayed under another id with a chained ledger line; a
// truncated or rolled-back ledger against a checkpoint), 43 (symlink outputs to ".", a loop,
// /etc/shadow and a target that is not UTF-8 pass untouched; a symlink added afterwards fails),
// `verify --ledger --from`, receipts made before the key existed, and head_sha256/length in JSON.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "attest/ledger.h"
#include "attest/openssl_util.h"
#include "tests/controller/run_test_support.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class AuditTest : public RunTest {
 protected:
  void generate_key() {
    fs::create_directories(state_);
    auto k = sealrun({"key", "generate", "--out-dir", state_ + "/keys"});
    ASSERT_EQ(k.status.code, 0) << k.err;
    pub_ = state_ + "/keys/sealrun.pub";
  }
  Captured verify(const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"receipt", "verify"};
    args.insert(args.end(), extra.begin(), extra.end());
    return sealrun(args);
  }
  json verify_json(const std::vector<std::string>& extra, int* code = nullptr) {
    auto args = extra;
    args.push_back("--json");
    auto v = verify(args);
    if (code != nullptr) *code = v.status.code;
    auto doc = json::parse(v.out, nullptr, false);
    EXPECT_FALSE(doc.is_discarded()) << v.out << v.err;
    return doc;
  }
  // "check: detail" of every failed check, for messages.
  static std::string failures(const json& doc) {
    std::string out;
    if (doc.is_object() && doc.contains("checks"))
      for (const auto& c : doc["checks"])
        if (c["result"] == "fail")
          out += c["check"].get<std::string>() + ": " + c["detail"].get<std::string>() + "\n";
    return out;
  }
  std::vector<std::string> ledger_lines() {
    std::string text = read_text(state_ + "/ledger.jsonl");
    std::vector<std::string> lines;
    for (size_t s = 0, e; (e = text.find('\n', s)) != std::string::npos; s = e + 1)
      lines.push_back(text.substr(s, e - s + 1));
    return lines;
  }
  std::string pub_;
};

// ACCEPTANCE 41, first half: run r1's signed receipt and envelope (and outputs) copied to
// results/r2/, with a correctly chained ledger line for r2, must fail both verifies.
TEST_F(AuditTest, ASignedReceiptReplayedUnderAnotherIdFailsBothVerifies) {
  generate_key();
  auto a = freeze("echo built > /out/a");
  ASSERT_EQ(run(a, "r1").status.code, 0);
  std::string r1 = state_ + "/results/r1", r2 = state_ + "/results/r2";
  ASSERT_EQ(verify({r1 + "/receipt.json", "--key", pub_, "--outputs", r1 + "/out", "--strict"})
                .status.code,
            0);
  fs::create_directories(r2);
  fs::copy(r1, r2,
           fs::copy_options::recursive | fs::copy_options::copy_symlinks |
               fs::copy_options::overwrite_existing);
  std::string bytes = read_text(r2 + "/receipt.json");
  {
    auto dir = attest::open_state_dir(state_);
    ASSERT_TRUE(dir.ok());
    auto line = attest::append_to_ledger(dir->get(),
                                         {"r2", "built", attest::sha256_hex_of(bytes), "", 10000});
    ASSERT_TRUE(line.ok()) << line.error().message();
  }
  int code = 0;
  json one = verify_json(
      {r2 + "/receipt.json", "--key", pub_, "--outputs", r2 + "/out", "--strict"}, &code);
  EXPECT_EQ(code, 1) << one.dump(2);
  EXPECT_NE(failures(one).find("id matches its place: the receipt's id is \"r1\" but it is in "
                               "results/r2/"),
            std::string::npos)
      << one.dump(2);
  json ledger = verify_json({"--ledger", state_, "--key", pub_}, &code);
  EXPECT_EQ(code, 1) << ledger.dump(2);
  std::string why = failures(ledger);
  EXPECT_NE(why.find("one receipt listed twice"), std::string::npos) << why;
  EXPECT_NE(why.find("the receipt's id is \"r1\", not the line's"), std::string::npos) << why;
  EXPECT_EQ(ledger["length"], 2);
  EXPECT_EQ(ledger["head_sha256"], attest::sha256_hex_of(ledger_lines().back()));
}

// ACCEPTANCE 41, second half: a checkpoint (signed with the state's key) catches a truncated, a
// rolled-back (cut, then written again by a new run) and a rewritten ledger; one that only grew
// still extends it.
TEST_F(AuditTest, ACheckpointCatchesATruncatedRolledBackOrRewrittenLedger) {
  generate_key();
  auto a = freeze("true");
  for (const char* id : {"c1", "c2"}) ASSERT_EQ(run(a, id).status.code, 0);
  std::string checkpoint = dir_ / "checkpoint.json";
  auto cp = sealrun({"ledger", "checkpoint", "--state-dir", state_, "--out", checkpoint, "--json"});
  ASSERT_EQ(cp.status.code, 0) << cp.out << cp.err;
  json written = json::parse(cp.out);
  EXPECT_EQ(written["length"], 2);
  EXPECT_FALSE(written["key_id"].is_null()) << "signed with STATE/keys/sealrun.key";
  auto again = sealrun({"ledger", "checkpoint", "--state-dir", state_, "--out", checkpoint});
  EXPECT_EQ(again.status.code, 1) << "a checkpoint is never overwritten";

  ASSERT_EQ(run(a, "c3").status.code, 0);
  int code = 0;
  json grown = verify_json({"--ledger", state_, "--key", pub_, "--checkpoint", checkpoint}, &code);
  EXPECT_EQ(code, 0) << failures(grown);
  EXPECT_EQ(grown["length"], 3);
  EXPECT_EQ(verify({"--ledger", state_, "--checkpoint", checkpoint, "--key", dir_ / "nokey.pub"})
                .status.code,
            1);

  auto lines = ledger_lines();
  ASSERT_EQ(lines.size(), 3u);
  std::string ledger = state_ + "/ledger.jsonl";
  write_text(ledger, lines[0]);  // truncated: the chain alone still verifies
  EXPECT_EQ(verify({"--ledger", state_, "--from", "2"}).status.code, 1) << "past the end";
  auto cut = verify_json({"--ledger", state_, "--checkpoint", checkpoint}, &code);
  EXPECT_EQ(code, 1);
  EXPECT_NE(failures(cut).find("truncated"), std::string::npos) << failures(cut);

  ASSERT_EQ(run(a, "c4").status.code, 0);  // rolled back: line 2 is now c4's
  EXPECT_EQ(verify({"--ledger", state_}).status.code, 0) << "the chain alone cannot tell";
  auto rolled = verify_json({"--ledger", state_, "--key", pub_, "--checkpoint", checkpoint}, &code);
  EXPECT_EQ(code, 1);
  EXPECT_NE(failures(rolled).find("rolled back"), std::string::npos) << failures(rolled);

  write_text(ledger, lines[0] + lines[1] + lines[2]);
  EXPECT_EQ(verify({"--ledger", state_, "--checkpoint", checkpoint}).status.code, 0);
  std::string edited = lines[1];  // rewritten: line 2 edited, the chain up to it still holds
  edited.replace(edited.find("\"at\":\"") + 6, 4, "1999");
  write_text(ledger, lines[0] + edited);
  EXPECT_EQ(verify({"--ledger", state_, "--checkpoint", checkpoint}).status.code, 1);
}

// `--from SEQ` reads the receipts from that line on (the chain whole); receipts made before the
// state directory had a key are notes with --key, an unsigned one after a signed one fails.
TEST_F(AuditTest, FromSeqAndReceiptsMadeBeforeTheKey) {
  auto a = freeze("true");
  ASSERT_EQ(run(a, "u1").status.code, 0);  // no key yet: unsigned
  generate_key();
  ASSERT_EQ(run(a, "s1").status.code, 0);
  int code = 0;
  json both = verify_json({"--ledger", state_, "--key", pub_}, &code);
  EXPECT_EQ(code, 0) << failures(both);
  EXPECT_NE(both.dump().find("unsigned, before the first signed receipt"), std::string::npos)
      << both.dump(2);

  fs::rename(state_ + "/keys", dir_ / "keys-away");
  ASSERT_EQ(run(a, "u2").status.code, 0);  // unsigned after a signed one
  fs::rename(dir_ / "keys-away", state_ + "/keys");
  json after = verify_json({"--ledger", state_, "--key", pub_}, &code);
  EXPECT_EQ(code, 1);
  EXPECT_NE(failures(after).find("unsigned, after line 2 was signed"), std::string::npos)
      << failures(after);

  fs::remove(state_ + "/results/u1/receipt.json");
  EXPECT_EQ(verify({"--ledger", state_}).status.code, 1);
  json from = verify_json({"--ledger", state_, "--from", "2"}, &code);
  EXPECT_EQ(code, 0) << failures(from);
  EXPECT_EQ(from["length"], 3);
  EXPECT_EQ(from["head_seq"], 3);
}

// ACCEPTANCE 43: symlinks the job made (to ".", a loop, /etc/shadow, a target that is not UTF-8,
// into a directory of its own) verify untouched without being followed; an alias added to out/
// afterwards, a link retargeted and a file behind a job's directory link are caught.
TEST_F(AuditTest, SymlinkOutputsVerifyUntouchedAndAnAliasAddedLaterFails) {
  auto a = freeze(
      "cd /out && echo data > file && mkdir d && echo inner > d/x && ln -s . dot && "
      "ln -s loop loop && ln -s /etc/shadow shadow && ln -s \"$(printf 'bad\\377')\" nonutf8 && "
      "ln -s ../../../../etc up && ln -s d dlink");
  auto c = run(a, "links");
  ASSERT_EQ(c.status.code, 0) << c.out << c.err;
  std::string receipt = receipt_path("links"), out = state_ + "/results/links/out";
  ASSERT_TRUE(fs::is_symlink(out + "/nonutf8"));
  int code = 0;
  json clean = verify_json({receipt, "--outputs", out}, &code);
  EXPECT_EQ(code, 0) << failures(clean);

  fs::create_symlink("file", out + "/alias");
  json alias = verify_json({receipt, "--outputs", out}, &code);
  EXPECT_EQ(code, 1);
  EXPECT_NE(failures(alias).find("extra: alias (symlink to file)"), std::string::npos)
      << failures(alias);
  fs::remove(out + "/alias");
  fs::create_hard_link(out + "/file", out + "/d/hard");
  EXPECT_EQ(verify({receipt, "--outputs", out}).status.code, 1) << "a hard-link alias";
  fs::remove(out + "/d/hard");

  fs::remove(out + "/nonutf8");
  fs::create_symlink("bad\376", out + "/nonutf8");  // one byte of the target differs
  auto retargeted = verify({receipt, "--outputs", out});
  EXPECT_EQ(retargeted.status.code, 1);
  EXPECT_NE(retargeted.out.find("changed: nonutf8 (symlink to bad\\xff -> symlink to bad\\xfe)"),
            std::string::npos)
      << retargeted.out;
}

}  // namespace
}  // namespace sealrun::testing
