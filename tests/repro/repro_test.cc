// SPDX-License-Identifier: Apache-2.0
// Ground truth for `sealrun rebuild --vary` (issue 26 point 5), on the real binary and real bwrap.
// tests/repro/projects/<name>/build.sh is a tiny project that leaks exactly one variation into its
// outputs (projects/clean leaks none). Each is admitted as `/bin/sh /src/build.sh` (a job naming
// /src, which must still run under build_path), run once, and rebuilt under `--vary all
// --explain`: a leak is caught (exit 1) and its variation is among the `causes` the search names,
// with no cause but the ones that change the same thing (kAlsoCaughtBy); the clean project is
// identical. reprotest (Debian's, its `null` virtual server, as root) gets a few of the same
// projects with the same single variation and must give the same verdict as sealrun.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "core/process.h"
#include "tests/controller/run_test_support.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string project_dir(const std::string& name) {
  return std::string(SEALRUN_SOURCE_DIR) + "/tests/repro/projects/" + name;
}

// Variations that change what another one's project leaks too (domain_host sets the host name).
const std::map<std::string, std::set<std::string>> kAlsoCaughtBy = {
    {"hostname", {"domain_host"}},
};

class ReproTest : public RunTest {
 protected:
  // The project as the admission's source, admitted as `/bin/sh /src/build.sh`, run once as
  // "orig". A project that runs /usr/bin/python3 gets the python-only /usr.
  Frozen built(const std::string& name) {
    fs::remove_all(src_);
    fs::copy(project_dir(name), src_, fs::copy_options::recursive);
    std::vector<std::string> args = freeze_args("admission.json");
    args.insert(args.end(), {"--env", "PATH=/usr/bin:/bin"});
    auto shell = busybox_tree_args();
    args.insert(args.end(), shell.begin(), shell.end());
    if (read_text(src_ + "/build.sh").find("/usr/bin/python3") != std::string::npos) {
      auto python = python_tree_args();
      args.insert(args.end(), python.begin(), python.end());
    }
    args.insert(args.end(), {"--", "/bin/sh", "/src/build.sh"});
    auto f = sealrun(args);
    EXPECT_EQ(f.status.code, 0) << f.err;
    Frozen a{dir_ / "admission.json", f.out.substr(0, 64)};
    auto c = run(a, "orig", {"--mechanism", "bwrap"});
    EXPECT_EQ(c.status.code, 0) << name << ": " << c.out << c.err;
    return a;
  }
  Captured rebuild(const Frozen& a, const std::vector<std::string>& extra) {
    std::vector<std::string> args = {
        "rebuild", receipt_path("orig"), "--admission", a.path,  "--state-dir",
        state_,    "--mechanism",        "bwrap",       "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    return sealrun(args, std::nullopt, 400000);
  }
};

class LeakTest : public ReproTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(LeakTest, IsCaughtUnderAllAndNamedAmongTheCauses) {
  const std::string& variation = GetParam();
  Frozen a = built(variation);
  auto c = rebuild(a, {"--vary", "all", "--explain", "--id", "all"});
  ASSERT_EQ(c.status.code, 1) << variation << ": " << c.out << c.err;
  json report = json::parse(c.out, nullptr, false);
  ASSERT_TRUE(report.is_object()) << c.out;
  std::vector<std::string> changed;
  for (const auto& d : report["differences"]) changed.push_back(d.value("path", ""));
  EXPECT_EQ(changed, std::vector<std::string>{"leak"}) << c.out;
  ASSERT_TRUE(report.contains("causes")) << c.out << c.err;
  std::set<std::string> causes;
  for (const auto& v : report["causes"]) causes.insert(v.get<std::string>());
  EXPECT_TRUE(causes.count(variation))
      << variation << " not among " << report["causes"].dump() << "\n"
      << c.err;
  std::set<std::string> allowed = {variation};
  if (auto it = kAlsoCaughtBy.find(variation); it != kAlsoCaughtBy.end())
    allowed.insert(it->second.begin(), it->second.end());
  for (const auto& cause : causes)
    EXPECT_TRUE(allowed.count(cause)) << variation << "'s project is also caught by " << cause;
  EXPECT_TRUE(std::is_sorted(report["causes"].begin(), report["causes"].end()));
  // Every rebuild of the search has a receipt of its own naming what it varied.
  for (const auto& probe : report["cause_rebuilds"]) {
    json r = receipt(probe["id"].get<std::string>());
    EXPECT_EQ(r["rebuild_of"]["variations"].size(), probe["variations"].size()) << probe.dump();
  }
}

INSTANTIATE_TEST_SUITE_P(Projects, LeakTest,
                         ::testing::Values("hostname", "umask", "locale", "timezone", "build_path",
                                           "num_cpus", "user_id", "time", "fileordering", "kernel",
                                           "aslr", "exec_path", "domain_host", "home"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

TEST_F(ReproTest, TheCleanProjectIsIdenticalUnderAll) {
  Frozen a = built("clean");
  auto c = rebuild(a, {"--vary", "all", "--explain", "--id", "all"});
  ASSERT_EQ(c.status.code, 0) << c.out << c.err;
  json report = json::parse(c.out, nullptr, false);
  EXPECT_EQ(report["identical"], true) << c.out;
  EXPECT_EQ(report["rebuild_of"]["variations"].size(), 14u) << c.out;
  EXPECT_FALSE(report.contains("causes")) << "nothing to explain: " << c.out;
}

// reprotest's name for each of sealrun's variations it is compared on.
const std::map<std::string, std::string> kReprotestName = {
    {"timezone", "timezone"}, {"umask", "umask"},         {"locale", "locales"},
    {"home", "home"},         {"exec_path", "exec_path"}, {"build_path", "build_path"},
};

struct Agreement {
  std::string project;
  std::vector<std::string> variations;  // sealrun's names
};

void PrintTo(const Agreement& a, std::ostream* os) { *os << a.project; }

class ReprotestTest : public ReproTest, public ::testing::WithParamInterface<Agreement> {};

// reprotest builds a copy of the project twice on the host (control, then with the variations)
// and compares out/: exit 0 reproducible, 1 not. The project writes where OUT, SRC and SCRATCH say.
TEST_P(ReprotestTest, GivesTheSameVerdictAsSealrun) {
  const Agreement& p = GetParam();
  auto reprotest = find_program("reprotest");
  if (!reprotest) GTEST_SKIP() << "reprotest is not installed (apt-get install reprotest)";
  ASSERT_EQ(::geteuid(), 0u) << "reprotest's variations are compared as root";
  std::string sealrun_list, reprotest_list = "-all";
  for (const auto& v : p.variations) {
    sealrun_list += (sealrun_list.empty() ? "" : ",") + v;
    reprotest_list += ",+" + kReprotestName.at(v);
  }
  Frozen a = built(p.project);
  auto ours = rebuild(a, {"--vary", sealrun_list, "--id", "varied"});
  ASSERT_TRUE(ours.status.code == 0 || ours.status.code == 1) << ours.out << ours.err;
  fs::copy(project_dir(p.project), dir_ / "reprotest-src", fs::copy_options::recursive);
  SpawnOptions o;
  o.argv = {*reprotest,
            "--vary=" + reprotest_list,
            "--no-diffoscope",
            "-c",
            "mkdir -p out scratch && OUT=$PWD/out SRC=$PWD SCRATCH=$PWD/scratch sh build.sh",
            dir_ / "reprotest-src",
            "out/*"};
  o.cwd = dir_.str();
  auto theirs = run_capture(o, 180000);
  ASSERT_TRUE(theirs) << theirs.error().message();
  ASSERT_TRUE(theirs->status.code == 0 || theirs->status.code == 1)
      << theirs->status.describe() << "\n"
      << theirs->out << theirs->err;
  EXPECT_EQ(ours.status.code, theirs->status.code)
      << p.project << " under " << sealrun_list << ": sealrun exit " << ours.status.code
      << ", reprotest exit " << theirs->status.code << "\n"
      << theirs->out << theirs->err;
  EXPECT_EQ(ours.status.code, p.project == "clean" ? 0 : 1) << ours.out;
}

INSTANTIATE_TEST_SUITE_P(
    Projects, ReprotestTest,
    ::testing::Values(
        Agreement{"timezone", {"timezone"}}, Agreement{"umask", {"umask"}},
        Agreement{"locale", {"locale"}}, Agreement{"build_path", {"build_path"}},
        Agreement{"exec_path", {"exec_path"}}, Agreement{"home", {"home"}},
        Agreement{"clean", {"timezone", "umask", "locale", "build_path", "exec_path", "home"}}),
    [](const ::testing::TestParamInfo<Agreement>& info) { return info.param.project; });

}  // namespace
}  // namespace sealrun::testing
