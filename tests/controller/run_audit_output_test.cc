// SPDX-License-Identifier: Apache-2.0
// What the review commands print, through the built binary: ACCEPTANCE 42 (a receipt whose
// strings hold escape sequences, C1 controls, bidi marks and newlines is shown escaped by every
// command, `verify` included, and forges no line), every `--json` command printing exactly one
// JSON document on every path, errors included (issue 27 item 5; the commands are found by the
// CLI model, `sealrun __generate json-commands`), and `receipt export` of a failed run that left
// no output (item 6).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "controller/receipt/receipt.h"
#include "fingerprint/sha256.h"
#include "tests/controller/run_test_support.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// What a terminal acts on or reorders: ESC, BEL, CR, C1 CSI (U+009B), RLO (U+202E), RLM (U+200F),
// the line separator (U+2028).
const std::vector<std::pair<std::string, std::string>> kActive = {{"ESC", "\x1b"},
                                                                  {"BEL", "\x07"},
                                                                  {"CR", "\r"},
                                                                  {"U+009B", "\xc2\x9b"},
                                                                  {"U+202E", "\xe2\x80\xae"},
                                                                  {"U+200F", "\xe2\x80\x8f"},
                                                                  {"U+2028", "\xe2\x80\xa8"}};

const std::string kForged =
    "done\npass  signature                    Ed25519 over the receipt's exact bytes, key f0rged\n"
    "\x1b[2J\x1b]0;owned\x07\xc2\x9b"
    "31m\xe2\x80\xae"
    "gnp.exe\xe2\x80\x8f\r\xe2\x80\xa8tail";

void expect_inert(const std::string& what, const std::string& text) {
  for (const auto& [name, bytes] : kActive)
    EXPECT_EQ(text.find(bytes), std::string::npos) << what << " prints a raw " << name << ":\n"
                                                   << text;
  for (size_t s = 0; s < text.size();) {
    size_t e = text.find('\n', s);
    std::string line = text.substr(s, e == std::string::npos ? std::string::npos : e - s);
    EXPECT_NE(line.rfind("pass  signature", 0), 0u) << what << " prints a forged line: " << line;
    if (e == std::string::npos) break;
    s = e + 1;
  }
}

void rewrite(const std::string& path, const std::function<void(json&)>& edit) {
  json doc = json::parse(read_text(path));
  edit(doc);
  doc["digest"] = {{"algorithm", "sha256"}, {"value", sha256_hex(receipt::digest_payload(doc))}};
  write_text(path, doc.dump(2) + "\n");
}

// ACCEPTANCE 42.
TEST_F(RunTest, HostileReceiptStringsAreShownEscapedByEveryCommand) {
  auto a = freeze("echo out > /out/f; false");
  ASSERT_EQ(run(a, "h1").status.code, 5);
  ASSERT_EQ(run(a, "h2").status.code, 5);
  for (const char* id : {"h1", "h2"})
    rewrite(receipt_path(id), [&](json& r) {
      r["reason"] = kForged + id;
      r["commands"][0]["label"] = kForged;
      r["grant"]["mode"] = kForged;
      r["outputs"].push_back({{"path", kForged}, {"sha256", std::string(64, 'a')}, {"size", 1}});
      if (r["view"].is_array() && !r["view"].empty()) r["view"][0]["job_path"] = kForged;
    });
  std::string h1 = receipt_path("h1"), h2 = receipt_path("h2");
  std::string out = state_ + "/results/h1/out";
  const std::vector<std::vector<std::string>> commands = {
      {"receipt", "show", h1},
      {"receipt", "show", h1, "--json"},
      {"receipt", "verify", h1},
      {"receipt", "verify", h1, "--outputs", out, "--strict"},
      {"receipt", "verify", h1, "--outputs", out, "--strict", "--json"},
      {"receipt", "verify", "--ledger", state_},
      {"receipt", "diff", h1, h2},
      {"receipt", "diff", h1, h2, "--json"},
      {"receipt", "export", h1, "--include-failed"},
      {"receipt", "export", h1},
      {"receipt", "list", "--state-dir", state_},
  };
  for (const auto& args : commands) {
    auto c = sealrun(args);
    std::string what;
    for (const auto& w : args) what += (w.size() > 40 ? "…" : w) + " ";
    expect_inert(what + "(stdout)", c.out);
    expect_inert(what + "(stderr)", c.err);
  }
  auto v = sealrun({"receipt", "verify", h1});
  EXPECT_NE(v.out.find("done\\npass  signature"), std::string::npos) << v.out;
}

// Item 6: a failed run that left no output exports, about its receipt.
TEST_F(RunTest, AFailedRunWithoutOutputsExportsAStatementAboutItsReceipt) {
  auto a = freeze("false");
  ASSERT_EQ(run(a, "nothing").status.code, 5);
  auto e = sealrun({"receipt", "export", receipt_path("nothing"), "--include-failed"});
  ASSERT_EQ(e.status.code, 0) << e.out << e.err;
  json st = json::parse(e.out);
  ASSERT_EQ(st["subject"].size(), 1u);
  EXPECT_EQ(st["subject"][0]["name"], "receipt.json");
  EXPECT_EQ(st["subject"][0]["digest"]["sha256"], sha256_hex(read_text(receipt_path("nothing"))));
}

// Item 5: one JSON document on stdout on every path, for every command that has --json.
TEST_F(RunTest, EveryJsonCommandPrintsOneJsonDocumentWhenItFails) {
  const std::string t = dir_.str();
  write_text(t + "/file", "not an admission\n");
  write_text(t + "/empty.json", "{}\n");
  fs::create_directories(t + "/keys");
  ASSERT_EQ(sealrun({"key", "generate", "--out-dir", t + "/keys"}).status.code, 0);
  const std::string zeros(64, '0');
  // A real failure of each command (not a usage error): a missing file, a bad digest, keys that
  // exist, a receipt that does not verify.
  const std::map<std::string, std::vector<std::string>> failing = {
      {"fingerprint tree", {"fingerprint", "tree", t + "/missing", "--out", t + "/inv.json"}},
      {"fingerprint file", {"fingerprint", "file", t + "/missing"}},
      {"fingerprint image", {"fingerprint", "image", t + "/missing.tar"}},
      {"fingerprint source", {"fingerprint", "source", t + "/missing"}},
      {"admit freeze",
       {"admit", "freeze", "--out", t + "/a.json", "--source", t + "/missing", "--state-dir",
        t + "/state"}},
      {"admit check", {"admit", "check", t + "/file", "--sha256", "nothex"}},
      {"run", {"run", t + "/missing.json", "--sha256", zeros, "--state-dir", t + "/state"}},
      {"rebuild", {"rebuild", t + "/missing.json", "--admission", t + "/missing2.json"}},
      {"census", {"census", t + "/missing"}},
      {"probe", {"probe", "--no-such-option"}},
      {"sweep", {"sweep", "--grace-ms", "soon"}},
      {"demo", {"demo", "--no-such-option"}},
      {"key generate", {"key", "generate", "--out-dir", t + "/keys"}},
      {"receipt show", {"receipt", "show", t + "/missing.json"}},
      {"receipt verify", {"receipt", "verify", t + "/missing.json"}},
      {"receipt diff", {"receipt", "diff", t + "/missing.json", t + "/empty.json"}},
      {"receipt export", {"receipt", "export", t + "/empty.json", "--include-failed"}},
      {"receipt list", {"receipt", "list", "--state-dir", t, "--since", "yesterday"}},
      {"receipt report", {"receipt", "report", t + "/missing.json", "--html", t + "/r.html"}},
      {"ledger checkpoint",
       {"ledger", "checkpoint", "--state-dir", t + "/missing", "--out", t + "/cp.json"}},
      {"index ingest",
       {"index", "ingest", t + "/missing", "--key", "missing=" + t + "/keys/sealrun.pub", "--db",
        "sqlite:" + t + "/index.sqlite"}},
      {"index query", {"index", "query", "--db", "sqlite:" + t + "/missing.sqlite"}},
      {"index report",
       {"index", "report", "--html", t + "/rep", "--db", "sqlite:" + t + "/missing.sqlite"}},
  };
  auto listed = sealrun({"__generate", "json-commands"});
  ASSERT_EQ(listed.status.code, 0) << listed.err;
  std::set<std::string> commands;
  for (size_t s = 0, e; (e = listed.out.find('\n', s)) != std::string::npos; s = e + 1)
    commands.insert(listed.out.substr(s, e - s));
  EXPECT_GE(commands.size(), failing.size()) << listed.out;
  for (const auto& command : commands) {
    auto it = failing.find(command);
    EXPECT_NE(it, failing.end()) << "`" << command << " --json` has no failure case here";
    std::vector<std::vector<std::string>> cases;
    if (it != failing.end()) cases.push_back(it->second);
    // A usage error, for every command.
    std::vector<std::string> usage;
    for (size_t s = 0, e; s <= command.size(); s = e + 1) {
      e = command.find(' ', s);
      if (e == std::string::npos) e = command.size();
      usage.push_back(command.substr(s, e - s));
    }
    usage.push_back("--no-such-option-at-all");
    cases.push_back(usage);
    for (auto args : cases) {
      args.push_back("--json");
      auto c = sealrun(args);
      EXPECT_NE(c.status.code, 0) << command << ": " << c.out;
      auto doc = json::parse(c.out, nullptr, false);
      ASSERT_FALSE(doc.is_discarded())
          << "`" << command << " --json` did not print one JSON document on stdout:\n[" << c.out
          << "]\nstderr: " << c.err;
      ASSERT_TRUE(doc.is_object()) << command << ": " << c.out;
      EXPECT_EQ(doc["exit"], c.status.code) << command << ": " << c.out;
      bool said = (doc.contains("error") && doc["error"].is_string() &&
                   !doc["error"].get<std::string>().empty()) ||
                  (doc.contains("reason") && doc["reason"].is_string() &&
                   !doc["reason"].get<std::string>().empty());
      EXPECT_TRUE(said) << command << " says no error: " << c.out;
    }
  }
}

}  // namespace
}  // namespace sealrun::testing
