// docs/acceptance.md 23–26, 30, 31 (after the job): a hostile job shapes /out and its own streams,
// and the real `sealrun run` (real bwrap, real cgroups) must record it honestly, within bounds,
// or refuse to call the run built. Each case is registered as `ACCEPTANCE.<n>.<name>` (see
// tests/controller/CMakeLists.txt); heavy work inside the job is done by one python3 process,
// since thousands of forks of coreutils take minutes on a loaded machine.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include "core/syscall.h"
#include "fingerprint/sha256.h"
#include "tests/controller/run_test_support.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A job script that runs `python` (a program text without single quotes) with /out as cwd.
std::string python_job(const std::string& python) {
  return "cd /out && /usr/bin/python3 -c '" + python + "'";
}

std::vector<json> output_list(const std::string& results) {
  std::vector<json> lines;
  std::string text = read_text(results + "/outputs.jsonl");
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    lines.push_back(json::parse(text.substr(start, nl - start)));
    start = nl + 1;
  }
  return lines;
}

// Every verdict-bearing member is present with a value (not stripped to null or empty).
void expect_verdict_fields(const json& r) {
  for (const char* key :
       {"state", "exit", "reason", "verifications", "grant", "memory", "commands", "stop_confirmed",
        "cleanup", "not_finished", "outputs_total", "outputs_list_sha256"})
    EXPECT_TRUE(r.contains(key)) << key;
  EXPECT_FALSE(r["verifications"].empty());
  EXPECT_TRUE(r["grant"].is_object());
  EXPECT_TRUE(r["memory"].is_object());
  EXPECT_EQ(r["stop_confirmed"], true);
  ASSERT_FALSE(r["commands"].empty());
  EXPECT_EQ(r["commands"][0]["label"], "job");
  for (const auto& c : r["cleanup"])
    EXPECT_EQ(c["action"].get<std::string>().find("ignore output"), std::string::npos)
        << "an output became a cleanup action: " << c.dump();
}

// `receipt verify --json`: the names of the checks that failed.
std::set<std::string> failed_checks(RunTest& t, const std::string& receipt) {
  auto v = t.sealrun({"receipt", "verify", "--json", receipt});
  std::set<std::string> failed;
  auto doc = json::parse(v.out, nullptr, false);
  EXPECT_FALSE(doc.is_discarded()) << v.out << v.err;
  if (doc.is_discarded()) return {"(no output)"};
  for (const auto& f : doc["checks"])
    if (f["result"] == "fail")  // "note": not checked (unsigned, no --outputs), not a failure
      failed.insert(f["check"].get<std::string>() + ": " + f["detail"].get<std::string>());
  return failed;
}

TEST_F(RunTest, JunkBesideOneRealOutputKeepsTheVerdictAndPinsEveryOutput) {
  auto a =
      freeze(python_job("import os\n"
                        "open(\"real.txt\", \"w\").write(\"real\\n\")\n"
                        "for i in range(50000): os.symlink(\"l%d\" % i, \"l%d\" % i)"));
  auto c = run(a, "junk");
  ASSERT_EQ(c.status.code, 0) << c.out << c.err;
  std::string results = state_ + "/results/junk";
  EXPECT_LE(fs::file_size(receipt_path("junk")), 1u << 20);
  auto r = receipt("junk");
  EXPECT_EQ(r["state"], "built");
  expect_verdict_fields(r);
  EXPECT_EQ(r["outputs_total"], 50001);
  EXPECT_EQ(r["outputs_list_sha256"], sha256_hex(read_text(results + "/outputs.jsonl")));
  auto lines = output_list(results);
  ASSERT_EQ(lines.size(), 50001u);
  // The real output is in the receipt itself, listed before the junk.
  bool real = false;
  for (const auto& o : r["outputs"])
    real = real || (o["path"] == "real.txt" && o["sha256"] == sha256_hex("real\n"));
  EXPECT_TRUE(real) << "the real output is not in the receipt";
  EXPECT_EQ(lines[0]["kind"], "symlink");
  EXPECT_EQ(lines[0]["target"], lines[0]["path"]);
  EXPECT_LT(r["cleanup"].size(), 20u);
  // Honest, so it verifies: symlink outputs carry their target instead of a digest.
  EXPECT_EQ(failed_checks(*this, receipt_path("junk")), std::set<std::string>{});
}

TEST_F(RunTest, MoreEntriesThanTheLimitIsNotBuilt) {
  auto a = freeze(python_job("for i in range(100001): open(\"f%d\" % i, \"w\").close()"));
  // The job itself succeeds; only its outputs cannot be recorded.
  auto c = run(a, "toomany");
  EXPECT_EQ(c.status.code, 5) << c.out << c.err;
  auto r = receipt("toomany");
  EXPECT_EQ(r["commands"][0]["exit"], 0);
  EXPECT_EQ(r["state"], "failed");
  expect_verdict_fields(r);
  EXPECT_NE(r["reason"].get<std::string>().find("more than 100000 entries"), std::string::npos)
      << r["reason"];
  EXPECT_TRUE(r["outputs_total"].is_null());
  EXPECT_TRUE(r["outputs"].empty());
  EXPECT_FALSE(r["not_finished"].empty());
}

TEST_F(RunTest, SparseOutputPastTheAllowanceFailsFastUnhashed) {
  auto a = freeze("truncate -s 200G /out/big && echo ok > /out/small",
                  {"limits.outer_s=30", "limits.wall_clock_s=20"});
  int64_t t0 = monotonic_ms();
  auto c = run(a, "sparse");
  int64_t took = monotonic_ms() - t0;
  // 5: found after the job; 6 would be a census that judges apparent sizes too, during it.
  EXPECT_TRUE(c.status.code == 5 || c.status.code == 6) << c.out << c.err;
  EXPECT_LT(took, 30000) << "the run outlived its outer_s";
  auto r = receipt("sparse");
  EXPECT_EQ(r["state"], "failed");
  expect_verdict_fields(r);
  std::string reason = r["reason"];
  EXPECT_NE(reason.find("result_max_bytes"), std::string::npos) << reason;
  EXPECT_TRUE(r["outputs_total"].is_null());
  if (c.status.code == 5) {
    EXPECT_NE(reason.find("214748364800"), std::string::npos) << reason;
  }
}

TEST_F(RunTest, OuterDeadlineEndsHashing) {
  // Within the allowance, but more than the outer deadline leaves time to hash.
  auto a = freeze("truncate -s 60G /out/big", {"limits.outer_s=12", "limits.wall_clock_s=6",
                                               "limits.result_max_bytes=107374182400"});
  int64_t t0 = monotonic_ms();
  auto c = run(a, "deadline");
  int64_t took = monotonic_ms() - t0;
  EXPECT_EQ(c.status.code, 5) << c.out << c.err;
  EXPECT_LT(took, 12000 + 10000) << "post-run work ignored outer_s";
  auto r = receipt("deadline");
  EXPECT_EQ(r["state"], "failed");
  expect_verdict_fields(r);
  ASSERT_FALSE(r["not_finished"].empty());
  std::string unfinished = r["not_finished"][0];
  EXPECT_NE(unfinished.find("outputs"), std::string::npos) << unfinished;
  EXPECT_NE(unfinished.find("outer time limit"), std::string::npos) << unfinished;
}

TEST_F(RunTest, HugeApparentStdoutIsReadOnlyToItsBound) {
  auto a = freeze(
      "/usr/bin/python3 -c 'import os; os.write(1, b\"x\" * 10); "
      "os.ftruncate(1, 100 << 30)'",
      {"limits.outer_s=60", "limits.wall_clock_s=30"});
  int64_t t0 = monotonic_ms();
  auto c = run(a, "bigout");
  int64_t took = monotonic_ms() - t0;
  EXPECT_TRUE(c.status.code == 5 || c.status.code == 6) << c.out << c.err;
  EXPECT_LT(took, 60000);
  auto r = receipt("bigout");
  EXPECT_EQ(r["state"], "failed");
  expect_verdict_fields(r);
  const auto& out = r["commands"][0]["stdout"];
  EXPECT_EQ(out["size"], 100ULL << 30);
  EXPECT_EQ(out["read_bytes"], 16u << 20);
  EXPECT_EQ(out["cut"], true);
  std::string reason = r["reason"];
  EXPECT_NE(reason.find("owned_max_bytes"), std::string::npos) << reason;
  EXPECT_LE(fs::file_size(state_ + "/results/bigout/logs/job.stdout"), 16u << 20);
}

TEST_F(RunTest, HundredsOfHardLinksAreCountedAndHashedOnce) {
  auto a =
      freeze(python_job("import os\n"
                        "open(\"f000\", \"wb\").write(os.urandom(100000000))\n"
                        "for i in range(1, 200): os.link(\"f000\", \"f%03d\" % i)"));
  auto c = run(a, "links");
  ASSERT_EQ(c.status.code, 0) << c.out << c.err;  // 200 x 100 MB would pass no 1 GiB allowance
  auto r = receipt("links");
  EXPECT_EQ(r["state"], "built");
  EXPECT_EQ(r["outputs_total"], 200);
  EXPECT_EQ(r["outputs_bytes"], 100000000);
  auto lines = output_list(state_ + "/results/links");
  ASSERT_EQ(lines.size(), 200u);
  EXPECT_FALSE(lines[0].contains("hardlink_of"));
  for (size_t i = 1; i < lines.size(); ++i) {
    EXPECT_EQ(lines[i]["hardlink_of"], "f000");
    EXPECT_EQ(lines[i]["sha256"], lines[0]["sha256"]);
  }
  EXPECT_EQ(failed_checks(*this, receipt_path("links")), std::set<std::string>{});
}

// True once the process `pid` holds a descriptor open on a path ending in `suffix`.
bool holds_open(pid_t pid, const std::string& suffix) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
    std::string target = fs::read_symlink(e.path(), ec).string();
    if (!ec && target.size() >= suffix.size() &&
        target.compare(target.size() - suffix.size(), suffix.size(), suffix) == 0)
      return true;
  }
  return false;
}

TEST_F(RunTest, SigtermWhileHashingIsHonoured) {
  auto a = freeze("truncate -s 60G /out/big", {"limits.result_max_bytes=107374182400"});
  auto controller = spawn(sealrun_options(
      {"run", a.path, "--sha256", a.sha256, "--id", "termhash", "--state-dir", state_}));
  ASSERT_TRUE(controller.ok()) << controller.error().message();
  int64_t deadline = monotonic_ms() + 60000;
  while (!holds_open(controller->pid(), "/results/termhash/out/big") && monotonic_ms() < deadline)
    ::usleep(20 * 1000);
  ASSERT_TRUE(holds_open(controller->pid(), "/results/termhash/out/big"))
      << "the controller never started hashing the output";
  ASSERT_TRUE(controller->signal(SIGTERM).ok());
  int64_t t0 = monotonic_ms();
  auto st = controller->wait_for(30000);
  ASSERT_TRUE(st.ok());
  ASSERT_TRUE(st->has_value()) << "SIGTERM during hashing was not honoured within 30 s";
  EXPECT_LT(monotonic_ms() - t0, 15000);
  int code = (*st)->code;
  EXPECT_TRUE(code == 5 || code == 7) << (*st)->describe();
  auto r = receipt("termhash");
  EXPECT_EQ(r["state"], "failed");
  expect_verdict_fields(r);
  EXPECT_NE(r["reason"].get<std::string>().find("SIGTERM"), std::string::npos) << r["reason"];
  ASSERT_FALSE(r["not_finished"].empty());
  EXPECT_NE(r["not_finished"][0].get<std::string>().find("outputs"), std::string::npos);
  EXPECT_TRUE(r["outputs_total"].is_null());
}

TEST_F(RunTest, HostileNamesAreLosslessAndShownEscaped) {
  auto a = freeze(
      python_job("import os\n"
                 "for n in [b\"a\\xff\", b\"a\\xfe\", b\"a\\xef\\xbf\\xbd\", b\"nl\\nfake line\",\n"
                 "          b\"esc\\x1b[31mred\"]: open(n, \"wb\").write(b\"x\")\n"));
  auto c = run(a, "names");
  ASSERT_EQ(c.status.code, 0) << c.out << c.err;
  auto r = receipt("names");
  auto lines = output_list(state_ + "/results/names");
  ASSERT_EQ(lines.size(), 5u);
  std::set<std::string> distinct;
  size_t b64 = 0;
  for (const auto& l : lines) {
    distinct.insert(l.dump());
    b64 += l.contains("path_b64");
  }
  EXPECT_EQ(distinct.size(), 5u);
  EXPECT_EQ(b64, 2u);  // \xff and \xfe; U+FFFD is valid UTF-8 and stays as it is
  EXPECT_EQ(failed_checks(*this, receipt_path("names")), std::set<std::string>{});

  auto show = sealrun({"receipt", "show", receipt_path("names")});
  EXPECT_EQ(show.status.code, 0) << show.err;
  EXPECT_EQ(show.out.find('\033'), std::string::npos) << show.out;
  EXPECT_EQ(show.out.find("\nfake line"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("nl\\nfake line"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("a\\xff"), std::string::npos) << show.out;

  auto exported = sealrun({"receipt", "export", receipt_path("names")});
  ASSERT_EQ(exported.status.code, 0) << exported.err;
  auto statement = json::parse(exported.out);
  std::set<std::string> subjects;
  for (const auto& s : statement["subject"]) subjects.insert(s.dump());
  EXPECT_EQ(subjects.size(), 5u);
}

TEST_F(RunTest, FailedJobShowsItsStderrTailEscaped) {
  auto a = freeze(
      "echo 'mkdir: cannot create directory build' >&2; "
      "printf 'trap\\033[2J\\n' >&2; exit 3");
  auto c = run(a, "tail");
  EXPECT_EQ(c.status.code, 5);
  auto show = sealrun({"receipt", "show", receipt_path("tail")});
  EXPECT_EQ(show.out.find('\033'), std::string::npos) << show.out;
  size_t failed = show.out.find("what failed:");
  ASSERT_NE(failed, std::string::npos) << show.out;
  size_t line = show.out.find("    | mkdir: cannot create directory build\n");
  EXPECT_NE(line, std::string::npos) << show.out;
  EXPECT_GT(line, failed);
  EXPECT_LT(line, show.out.find("details:"));
  EXPECT_NE(show.out.find("    | trap\\x1b[2J\n"), std::string::npos) << show.out;
}

TEST_F(RunTest, OutputThreeThousandDirectoriesDeepIsRecorded) {
  auto a =
      freeze(python_job("import os\n"
                        "for i in range(3000): os.mkdir(\"d\"); os.chdir(\"d\")\n"
                        "open(\"f\", \"w\").write(\"deep\\n\")"));
  auto c = run(a, "deep");
  ASSERT_EQ(c.status.code, 0) << c.out << c.err;
  auto r = receipt("deep");
  EXPECT_EQ(r["state"], "built");
  EXPECT_EQ(r["outputs_total"], 1);
  std::string expected;
  for (int i = 0; i < 3000; ++i) expected += "d/";
  expected += "f";
  ASSERT_EQ(r["outputs"].size(), 1u);
  EXPECT_EQ(r["outputs"][0]["path"], expected);
  EXPECT_EQ(r["outputs"][0]["sha256"], sha256_hex("deep\n"));
  EXPECT_TRUE(r["truncated"].empty()) << r["truncated"];
}

}  // namespace
}  // namespace sealrun::testing
