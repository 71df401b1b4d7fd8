// `sealrun receipt diff` on receipts of real runs (issue 27, "same run?"): two runs of one
// admission are the same run though every per-run field differs; a learned admission re-frozen
// after a closure file changed shows that input's digest; a learned view against a /usr tree is
// matched by job path; --json carries plain values; what a job wrote reaches the terminal escaped.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>

#include "tests/learn/learn_run_test.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class ReceiptDiffTest : public LearnRunTest {
 protected:
  Captured diff(const std::string& a, const std::string& b, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"receipt", "diff", receipt_path(a), receipt_path(b)};
    args.insert(args.end(), extra.begin(), extra.end());
    return sealrun(args);
  }
  void built(const Frozen& f, const std::string& id) {
    auto c = run(f, id, {"--mechanism", "bwrap"});
    ASSERT_EQ(c.status.code, 0) << c.out << c.err;
  }
  Frozen learned(const std::string& script, const std::string& name) {
    auto c = learn(script, name);
    EXPECT_EQ(c.status.code, 0) << c.out << c.err;
    json doc = json::parse(c.out, nullptr, false);
    return {dir_ / name, doc.is_object() ? doc.value("sha256", "") : ""};
  }
  static std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }
};

// A file of the host's /etc that a learned closure pins, removed again at the end.
class EtcFile {
 public:
  explicit EtcFile(const std::string& content)
      : path_("/etc/sealrun-diff-test-" + std::to_string(::getpid())) {
    write(content);
  }
  ~EtcFile() { fs::remove(path_); }
  void write(const std::string& content) const { std::ofstream(path_) << content; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST_F(ReceiptDiffTest, TwoRunsOfOneAdmissionAreTheSameRun) {
  Frozen a = freeze("mkdir -p /out/d && echo same > /out/d/a && echo log >&2");
  built(a, "one");
  built(a, "two");
  auto d = diff("one", "two");
  EXPECT_EQ(d.status.code, 0) << d.out << d.err;
  EXPECT_EQ(first_line(d.out), "same inputs, same environment, same outputs") << d.out;
  auto j = diff("one", "two", {"--json"});
  EXPECT_EQ(j.status.code, 0) << j.out << j.err;
  json doc = json::parse(j.out);
  EXPECT_EQ(doc["same"], true);
  EXPECT_TRUE(doc["differences"].empty()) << doc.dump();
  EXPECT_GT(doc["per_run_left_out"].get<int>(), 0);  // the id, the times, the run's own paths
  // --all lists them, and they change nothing.
  auto all = diff("one", "two", {"--all", "--json"});
  EXPECT_EQ(all.status.code, 0) << all.out << all.err;
  std::set<std::string> paths;
  json listed = json::parse(all.out);
  for (const auto& item : listed["differences"]) {
    EXPECT_EQ(item["class"], "per-run") << item.dump();
    paths.insert(item["path"].get<std::string>());
  }
  EXPECT_TRUE(paths.count("id") && paths.count("view[/out].host_path")) << all.out;
}

// The case: re-frozen after a pinned host file changed, the input's digest is shown.
TEST_F(ReceiptDiffTest, AChangedClosureFileShowsAsAnInputDigest) {
  EtcFile etc("one\n");
  std::string script = "cat " + etc.path() + " > /dev/null && echo same > /out/a";
  built(learned(script, "first.json"), "before");
  etc.write("two\n");
  built(learned(script, "second.json"), "after");
  auto j = diff("before", "after", {"--json"});
  EXPECT_EQ(j.status.code, 1) << j.out << j.err;
  json doc = json::parse(j.out);
  EXPECT_EQ(doc["same_inputs"], false) << j.out;
  EXPECT_EQ(doc["same_outputs"], true) << j.out;
  std::string input = "admission.inputs[closure:" + etc.path() + "].digest.sha256";
  bool shown = false;
  for (const auto& item : doc["differences"])
    if (item["path"] == input) {
      shown = true;
      EXPECT_EQ(item["class"], "inputs");
      // Plain values: the hex digest itself, not JSON text of it.
      ASSERT_TRUE(item["a"].is_string() && item["b"].is_string()) << item.dump();
      EXPECT_TRUE(std::regex_match(item["a"].get<std::string>(), std::regex("[0-9a-f]{64}")))
          << item.dump();
      EXPECT_NE(item["a"], item["b"]);
    }
  EXPECT_TRUE(shown) << input << " not in " << j.out;
  auto text = diff("before", "after");
  EXPECT_EQ(first_line(text.out), "different inputs, same environment, same outputs") << text.out;
  EXPECT_NE(text.out.find(input), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("view[" + etc.path() + "].pin"), std::string::npos) << text.out;
}

// A learned closure against a pinned /usr tree: the views are matched by job path (what only one
// of them has, once), never by position.
TEST_F(ReceiptDiffTest, ALearnedViewAndAUsrTreeAreMatchedByJobPath) {
  const std::string script = "/usr/bin/python3 -c pass && echo same > /out/a";
  built(learned(script, "learned.json"), "learned");
  built(freeze(script, {}, "usr.json"), "usr");
  auto j = diff("learned", "usr", {"--json"});
  EXPECT_EQ(j.status.code, 1) << j.out << j.err;
  json doc = json::parse(j.out);
  EXPECT_EQ(doc["same_inputs"], false);
  EXPECT_EQ(doc["same_outputs"], true) << j.out;
  std::set<std::string> only_a, only_b;
  json ra = receipt("learned"), rb = receipt("usr");
  for (const auto& v : ra["view"]) only_a.insert(v["job_path"]);
  for (const auto& v : rb["view"]) only_b.insert(v["job_path"]);
  std::set<std::string> both;
  for (const auto& p : only_a)
    if (only_b.count(p)) both.insert(p);
  for (const auto& p : both) only_a.erase(p), only_b.erase(p);
  ASSERT_TRUE(only_b.count("/usr")) << j.out;
  std::set<std::string> removed, added;
  for (const auto& item : doc["differences"]) {
    std::string path = item["path"];
    EXPECT_FALSE(std::regex_search(path, std::regex("^view\\[[0-9]+\\]"))) << path;
    if (path.rfind("view[", 0) != 0 || path.back() != ']') continue;
    std::string job_path = path.substr(5, path.size() - 6);
    (item["change"] == "removed" ? removed : added).insert(job_path);
  }
  EXPECT_EQ(removed, only_a);
  EXPECT_EQ(added, only_b);
}

// What a job wrote (a name, a stream) is escaped: no escape sequence, no line of its own.
TEST_F(ReceiptDiffTest, WhatTheJobWroteReachesTheTerminalEscaped) {
  Frozen a = freeze(
      "n=$(cat /proc/sys/kernel/random/uuid); printf 'x\\033]0;owned\\007%s\\n' $n >&2; "
      "echo $n > \"/out/$(printf 'f\\033[2J\\nsame inputs')$n\"");
  built(a, "e1");
  built(a, "e2");
  auto d = diff("e1", "e2");
  EXPECT_EQ(d.status.code, 1) << d.out << d.err;
  EXPECT_EQ(first_line(d.out), "same inputs, same environment, different outputs") << d.out;
  EXPECT_EQ(d.out.find('\033'), std::string::npos) << d.out;
  EXPECT_EQ(d.out.find('\007'), std::string::npos) << d.out;
  EXPECT_EQ(d.out.find("\nsame inputs"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("output added: f\\x1b[2J\\nsame inputs"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("commands[job].stderr.tail"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("x\\u001b]0;owned\\u0007"), std::string::npos) << d.out;
}

TEST_F(ReceiptDiffTest, AReceiptThatCannotBeReadIsNoVerdict) {
  Frozen a = freeze("echo same > /out/a");
  built(a, "r");
  auto d = sealrun({"receipt", "diff", receipt_path("r"), dir_ / "missing.json", "--json"});
  EXPECT_EQ(d.status.code, 2) << d.out << d.err;
  json doc = json::parse(d.out, nullptr, false);
  ASSERT_TRUE(doc.is_object()) << d.out;
  EXPECT_EQ(doc["exit"], 2);
  EXPECT_NE(doc["error"].get<std::string>().find("missing.json"), std::string::npos) << d.out;
}

}  // namespace
}  // namespace sealrun::testing
