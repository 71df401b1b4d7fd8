// SPDX-License-Identifier: Apache-2.0
// `sealrun rebuild` end to end (issue 13): the real binary reruns a real run's admission under
// real bwrap, varies the job's world (--vary), compares outputs by path and digest, and refuses a
// receipt and admission that do not belong together, a receipt of a run that never executed and
// one whose output list is gone. `receipt diff` must agree with it.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/controller/run_test_support.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class RebuildTest : public RunTest {
 protected:
  // Runs `script` once as `id`; the run must build.
  Frozen built(const std::string& script, const std::string& id) {
    Frozen a = freeze(script);
    auto c = run(a, id, {"--mechanism", "bwrap"});
    EXPECT_EQ(c.status.code, 0) << c.err;
    return a;
  }
  Captured rebuild(const std::string& receipt, const Frozen& a,
                   const std::vector<std::string>& extra = {}) {
    // bwrap alone: with `auto`, podman's probe may leave a pause process whose mount namespace
    // holds the owned file system a moment too long (exit 7), which is not what these test.
    std::vector<std::string> args = {"rebuild",     receipt, "--admission", a.path,
                                     "--state-dir", state_,  "--mechanism", "bwrap"};
    args.insert(args.end(), extra.begin(), extra.end());
    return sealrun(args);
  }
  static json parse(const std::string& text) {
    auto doc = json::parse(text, nullptr, false);
    EXPECT_FALSE(doc.is_discarded()) << text;
    return doc;
  }
};

TEST_F(RebuildTest, AReproducibleJobRebuildsIdenticalUnderEveryVariation) {
  Frozen a = built("mkdir -p /out/d && echo same > /out/a && echo x > /out/d/b", "orig");
  auto c = rebuild(receipt_path("orig"), a, {"--vary", "all", "--id", "again", "--json"});
  ASSERT_EQ(c.status.code, 0) << c.out << c.err;
  json report = parse(c.out);
  EXPECT_EQ(report["identical"], true);
  EXPECT_EQ(report["outputs"]["original"], 2);
  EXPECT_EQ(report["outputs"]["rebuilt"], 2);
  EXPECT_TRUE(report["differences"].empty());
  // The rebuild's own receipt names the receipt it rebuilt, byte for byte, and what it varied.
  json rebuilt = receipt("again");
  EXPECT_EQ(rebuilt["state"], "built");
  ASSERT_TRUE(rebuilt["rebuild_of"].is_object()) << rebuilt.dump();
  EXPECT_EQ(rebuilt["rebuild_of"]["id"], "orig");
  auto sha = sealrun({"fingerprint", "file", receipt_path("orig")});
  EXPECT_NE(sha.out.find(rebuilt["rebuild_of"]["receipt_sha256"].get<std::string>()),
            std::string::npos)
      << sha.out;
  EXPECT_EQ(rebuilt["rebuild_of"]["variations"].size(), 14u);
  // A plain run's receipt says it is no rebuild.
  EXPECT_TRUE(receipt("orig")["rebuild_of"].is_null());
  // And the rebuild's receipt verifies.
  auto v = sealrun({"receipt", "verify", receipt_path("again")});
  EXPECT_EQ(v.status.code, 0) << v.out << v.err;
}

// The bundled example (a C program built with this host's compiler) is reproducible in every
// varied world: the proof on a real compiler, not only on shell scripts.
TEST_F(RebuildTest, TheDemoRebuildsIdenticalUnderEveryVariation) {
  std::string out = dir_ / "demo";
  auto demo = sealrun({"demo", "--out", out}, std::nullopt, 300000);
  ASSERT_EQ(demo.status.code, 0) << demo.out << demo.err;
  std::string receipt_file = demo.out.substr(demo.out.rfind('\n', demo.out.size() - 2) + 1);
  while (!receipt_file.empty() && receipt_file.back() == '\n') receipt_file.pop_back();
  ASSERT_TRUE(fs::exists(receipt_file)) << demo.out;
  auto c = sealrun({"rebuild", receipt_file, "--admission", out + "/admission.json", "--vary",
                    "all", "--json", "--mechanism", "bwrap"},
                   std::nullopt, 300000);
  ASSERT_EQ(c.status.code, 0) << c.out << c.err;
  json report = parse(c.out);
  EXPECT_EQ(report["identical"], true);
  EXPECT_GE(report["outputs"]["rebuilt"].get<int>(), 2);
}

struct Leak {
  const char* variation;  // the --vary name that must catch it
  const char* script;     // a job that embeds what that variation changes
  const char* other;      // a variation that must not
};

class RebuildVariationTest : public RebuildTest, public ::testing::WithParamInterface<Leak> {};

TEST_P(RebuildVariationTest, IsCaughtByItsVariationOnlyAndTheOutputIsNamed) {
  const Leak& leak = GetParam();
  Frozen a = built(std::string(leak.script) + " > /out/leak && echo fixed > /out/fixed", "orig");
  auto other = rebuild(receipt_path("orig"), a, {"--vary", leak.other, "--id", "other"});
  EXPECT_EQ(other.status.code, 0) << leak.other << ": " << other.out << other.err;
  auto caught = rebuild(receipt_path("orig"), a, {"--vary", leak.variation, "--id", "caught"});
  EXPECT_EQ(caught.status.code, 1) << leak.variation << ": " << caught.out << caught.err;
  EXPECT_NE(caught.out.find("changed: leak"), std::string::npos) << caught.out;
  EXPECT_EQ(caught.out.find("fixed"), std::string::npos) << caught.out;
  EXPECT_NE(caught.out.find(std::string("varied ") + leak.variation), std::string::npos)
      << caught.out;
  json rebuilt = receipt("caught");
  ASSERT_EQ(rebuilt["rebuild_of"]["variations"].size(), 1u);
  EXPECT_EQ(rebuilt["rebuild_of"]["variations"][0]["name"], leak.variation);
}

INSTANTIATE_TEST_SUITE_P(
    Leaks, RebuildVariationTest,
    ::testing::Values(Leak{"hostname", "cat /proc/sys/kernel/hostname", "umask"},
                      Leak{"umask", "umask", "hostname"},
                      Leak{"timezone", "date -d @0 +%H%M", "locale"},
                      Leak{"locale", "echo \"$LANG $LC_ALL\"", "timezone"},
                      Leak{"build_path", "pwd", "umask"}, Leak{"num_cpus", "nproc", "build_path"},
                      Leak{"user_id", "id -u", "num_cpus"}),
    [](const ::testing::TestParamInfo<Leak>& info) { return std::string(info.param.variation); });

TEST_F(RebuildTest, AnAdmissionOfAnotherRunIsRefusedNamingBothDigests) {
  Frozen a = built("echo a > /out/a", "orig");
  Frozen other = freeze("echo b > /out/a", {}, "other.json");
  auto c = rebuild(receipt_path("orig"), other);
  EXPECT_EQ(c.status.code, 3) << c.err;
  EXPECT_NE(c.err.find(other.sha256), std::string::npos) << c.err;
  EXPECT_NE(c.err.find(a.sha256), std::string::npos) << c.err;
  EXPECT_NE(c.err.find("do not belong together"), std::string::npos) << c.err;
  EXPECT_FALSE(fs::exists(state_ + "/results/other")) << "nothing may run";
}

TEST_F(RebuildTest, AReceiptOfARunThatNeverExecutedIsRefused) {
  Frozen a = freeze("echo a > /out/a");
  Frozen wrong = a;
  wrong.sha256 = std::string(64, '0');  // refused: nothing executed, a not_run receipt
  auto r = run(wrong, "refused");
  ASSERT_EQ(r.status.code, 3) << r.err;
  ASSERT_EQ(receipt("refused")["state"], "not_run");
  auto c = rebuild(receipt_path("refused"), a, {"--json"});
  EXPECT_EQ(c.status.code, 3) << c.err;
  EXPECT_NE(c.err.find("never executed"), std::string::npos) << c.err;
  json report = parse(c.out);
  EXPECT_EQ(report["exit"], 3);
  EXPECT_NE(report["error"].get<std::string>().find("not_run"), std::string::npos);
}

TEST_F(RebuildTest, AReceiptWhoseOutputListIsGoneOrAlteredIsRefused) {
  Frozen a = built("echo a > /out/a", "orig");
  std::string list = state_ + "/results/orig/outputs.jsonl";
  std::string bytes = read_text(list);
  write_text(list, bytes + "{\"path\":\"forged\",\"sha256\":\"00\",\"size\":1}\n");
  auto altered = rebuild(receipt_path("orig"), a);
  EXPECT_EQ(altered.status.code, 3) << altered.err;
  EXPECT_NE(altered.err.find("altered"), std::string::npos) << altered.err;
  fs::remove(list);
  auto gone = rebuild(receipt_path("orig"), a);
  EXPECT_EQ(gone.status.code, 3) << gone.err;
  EXPECT_NE(gone.err.find("outputs.jsonl"), std::string::npos) << gone.err;
}

TEST_F(RebuildTest, UnknownVariationsAreUsageErrorsAndNothingRuns) {
  Frozen a = built("echo a > /out/a", "orig");
  // Every one of reprotest's names is offered (issue 26); a misspelt one is refused.
  auto typo = rebuild(receipt_path("orig"), a, {"--vary", "time,kernal", "--id", "typo"});
  EXPECT_EQ(typo.status.code, 2) << typo.err;
  EXPECT_NE(typo.err.find("\"kernal\""), std::string::npos) << typo.err;
  EXPECT_NE(typo.err.find("domain_host"), std::string::npos) << typo.err;  // the known names
  EXPECT_FALSE(fs::exists(state_ + "/results/typo")) << "nothing may run";
  auto bogus = rebuild(receipt_path("orig"), a, {"--vary", "hostname,moon_phase"});
  EXPECT_EQ(bogus.status.code, 2) << bogus.err;
  EXPECT_NE(bogus.err.find("moon_phase"), std::string::npos) << bogus.err;
}

// Added, removed and changed outputs, named the same way by rebuild and by receipt diff.
TEST_F(RebuildTest, ReceiptDiffAgreesWithRebuildByPath) {
  Frozen a = built(
      "h=$(cat /proc/sys/kernel/hostname); echo $h > /out/name; echo same > /out/same; "
      "if [ $h = sealrun ]; then echo 1 > /out/only-first; else echo 2 > /out/only-second; fi",
      "orig");
  auto c = rebuild(receipt_path("orig"), a, {"--vary", "hostname", "--id", "varied", "--json"});
  ASSERT_EQ(c.status.code, 1) << c.out << c.err;
  json report = parse(c.out);
  std::map<std::string, std::string> by_rebuild;
  for (const auto& d : report["differences"])
    by_rebuild[d["path"].get<std::string>()] = d["change"].get<std::string>();
  EXPECT_EQ(by_rebuild,
            (std::map<std::string, std::string>{
                {"name", "changed"}, {"only-first", "removed"}, {"only-second", "added"}}));
  auto d = sealrun({"receipt", "diff", receipt_path("orig"), receipt_path("varied"), "--json"});
  EXPECT_EQ(d.status.code, 1) << d.err;
  std::map<std::string, std::string> by_diff;
  json compared = parse(d.out);
  EXPECT_EQ(compared["same_outputs"], false) << d.out;
  for (const auto& item : compared["differences"])
    if (item["path"].get<std::string>().rfind("outputs[", 0) == 0)
      by_diff[item["path"].get<std::string>()] = item["change"].get<std::string>();
  std::map<std::string, std::string> expected;
  for (const auto& [path, change] : by_rebuild) expected["outputs[" + path + "]"] = change;
  EXPECT_EQ(by_diff, expected);
  // The text form names each the same way.
  auto text = sealrun({"receipt", "diff", receipt_path("orig"), receipt_path("varied")});
  EXPECT_NE(text.out.find("output removed: only-first"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("output added: only-second"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("output changed: name"), std::string::npos) << text.out;
}

TEST_F(RebuildTest, ExplainShowsSizesAndTheFirstDifferingByte) {
  Frozen a = built("printf 'abc%s\\n' $(cat /proc/sys/kernel/hostname) > /out/t", "orig");
  auto c = rebuild(receipt_path("orig"), a, {"--vary", "hostname", "--explain", "--json"});
  ASSERT_EQ(c.status.code, 1) << c.out << c.err;
  json report = parse(c.out);
  ASSERT_EQ(report["explain"].size(), 1u) << report.dump();
  const json& e = report["explain"][0];
  EXPECT_EQ(e["path"], "t");
  EXPECT_EQ(e["a_size"], 11u);  // "abcsealrun\n"
  EXPECT_EQ(e["b_size"], 19u);  // "abcsealrun-rebuild\n"
  EXPECT_EQ(e["first_difference"], 10u);
  if (e["how"] == "diffoscope") {
    EXPECT_NE(e["report"].get<std::string>().find("sealrun-rebuild"), std::string::npos);
    EXPECT_TRUE(fs::exists(e["kept"].get<std::string>()));
  } else {
    EXPECT_EQ(e["how"], "bytes");
    EXPECT_NE(e["note"].get<std::string>().find("diffoscope is not installed"), std::string::npos);
  }
}

}  // namespace
}  // namespace sealrun::testing
