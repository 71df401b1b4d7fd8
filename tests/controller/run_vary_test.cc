// SPDX-License-Identifier: Apache-2.0
// `sealrun rebuild --vary` end to end for the variations of issue 26: the real binary rebuilds a
// real run under real bwrap (as root, with the job user), and what each variation changes is seen
// from inside the job — the clock (a dynamically linked date under libfaketime), the order `ls -f`
// lists /src in, `uname -r`, /proc/self/personality, PATH, the NIS domain name, HOME — and nothing
// else changes with it. build_path: a job whose argv names /src runs, and getcwd() in /scratch
// answers with the varied path.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "tests/controller/run_test_support.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// What the probe job writes, one file per thing a variation may change.
constexpr const char* kProbe =
    "/usr/bin/date +%s > /out/date; "
    "/usr/bin/ls -f /src > /out/ls; "
    "uname -r > /out/uname_r; uname -v > /out/uname_v; "
    "cat /proc/self/personality > /out/personality; "
    "{ echo \"$PATH\"; if test -d /.sealrun-rebuild-path; then ls -A /.sealrun-rebuild-path | wc "
    "-l; fi; } > /out/path; "
    "cat /proc/sys/kernel/domainname > /out/domainname; hostname > /out/hostname; "
    "{ echo \"HOME=${HOME-unset}\"; if test -d \"${HOME-/nonexistent}\"; then ls -A \"$HOME\" | "
    "wc -l; else echo absent; fi; } > /out/home";

class RunVaryTest : public RunTest {
 protected:
  // build/fixtures/date-usr, pinned as the job's /usr: a dynamically linked date and ls.
  std::vector<std::string> usr_args() {
    SpawnOptions o;
    std::string fixtures = std::string(SEALRUN_BINARY_DIR) + "/fixtures";
    o.argv = {"/bin/bash", std::string(SEALRUN_SOURCE_DIR) + "/tests/fixtures/date_usr.sh",
              fixtures};
    auto built = run_capture(o, 120000);
    EXPECT_TRUE(built.ok() && built->status.success()) << (built.ok() ? built->err : "");
    return {"--tree", fixtures + "/date-usr=/usr"};
  }
  Captured rebuild(const Frozen& a, const std::string& vary, const std::string& id) {
    return sealrun({"rebuild", receipt_path("orig"), "--admission", a.path, "--state-dir", state_,
                    "--mechanism", "bwrap", "--vary", vary, "--id", id, "--json"});
  }
  std::string out(const std::string& id, const std::string& name) {
    return read_text(fs::path(state_) / "results" / id / "out" / name);
  }
};

TEST_F(RunVaryTest, EachNewVariationShowsInTheJobAndChangesNothingElse) {
  // Enough entries in /src that an order is visible (ext4 lists by hash, the copy by creation).
  for (const char* name : {"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf"})
    write_text(src_ + "/" + name, std::string(name) + "\n");
  Frozen a = freeze(kProbe, {}, "admission.json", usr_args());
  auto c = run(a, "orig", {"--mechanism", "bwrap"});
  ASSERT_EQ(c.status.code, 0) << c.out << c.err;
  const std::vector<std::string> files = {
      "date", "ls", "uname_r", "uname_v", "personality", "path", "domainname", "hostname", "home"};
  std::map<std::string, std::string> control;
  for (const auto& f : files) control[f] = out("orig", f);
  EXPECT_EQ(control["personality"], "00000000\n");
  EXPECT_EQ(control["home"], "HOME=unset\nabsent\n");

  struct Case {
    const char* vary;
    std::set<std::string> changed;  // the probe files it must change, and no other
  };
  const Case cases[] = {
      {"time", {"date"}},
      {"fileordering", {"ls"}},
      {"kernel", {"uname_r", "personality"}},
      {"aslr", {"personality"}},
      {"exec_path", {"path"}},
      {"domain_host", {"domainname", "hostname"}},
      {"home", {"home"}},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.vary);
    auto r = rebuild(a, k.vary, k.vary);
    EXPECT_EQ(r.status.code, 1) << r.out << r.err;
    json report = json::parse(r.out, nullptr, false);
    ASSERT_FALSE(report.is_discarded()) << r.out;
    ASSERT_EQ(report["rebuild_of"]["variations"].size(), 1u);
    EXPECT_EQ(report["rebuild_of"]["variations"][0]["name"], k.vary);
    std::set<std::string> changed;
    for (const auto& f : files)
      if (f != "date" && out(k.vary, f) != control[f]) changed.insert(f);
    // The clock moves between runs anyway: changed means by more than a day.
    long moved = std::stol(out(k.vary, "date")) - std::stol(control["date"]);
    if (moved > 86400 || moved < 0) changed.insert("date");
    EXPECT_EQ(changed, k.changed);
  }
  // time: more than a year later (373 days; the runs are seconds apart).
  long shift = std::stol(out("time", "date")) - std::stol(control["date"]);
  EXPECT_GT(shift, 372L * 86400) << shift;
  EXPECT_LT(shift, 374L * 86400) << shift;
  // fileordering: the same names, in another order.
  auto sorted_lines = [](std::string text) {
    std::multiset<std::string> lines;
    size_t start = 0;
    for (size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1)
      lines.insert(text.substr(start, nl - start));
    return lines;
  };
  EXPECT_EQ(sorted_lines(out("fileordering", "ls")), sorted_lines(control["ls"]));
  EXPECT_NE(out("fileordering", "ls"), control["ls"]);
  // kernel: a 2.6 release, and the personality that makes it; aslr: no randomisation.
  EXPECT_EQ(out("kernel", "uname_r").rfind("2.6.", 0), 0u) << out("kernel", "uname_r");
  EXPECT_EQ(out("kernel", "personality"), "00020000\n");
  EXPECT_EQ(out("aslr", "personality"), "00040000\n");
  // exec_path: an extra directory at PATH's end, which exists and is empty.
  EXPECT_EQ(out("exec_path", "path"), "/usr/bin:/bin:/.sealrun-rebuild-path\n0\n");
  EXPECT_EQ(out("domain_host", "domainname"), "sealrun-rebuild.invalid\n");
  EXPECT_EQ(out("domain_host", "hostname"), "sealrun-rebuild\n");
  EXPECT_EQ(out("home", "home"), "HOME=/.sealrun-rebuild-home\n0\n");
}

TEST_F(RunVaryTest, BuildPathMovesSrcAndScratchAndAJobNamingSrcRuns) {
  write_text(src_ + "/build.sh",
             "mkdir -p /scratch/x && cd /scratch/x && pwd -P > /out/scratch\n"
             "cd /src && pwd -P > /out/src\n"
             // The usual first step: a copy of the source, built in /scratch. cp -a copies a
             // command-line symlink as a link, so /src must be a directory here.
             "cp -a /src /scratch/s && cd /scratch/s && pwd -P > /out/copy && : > made\n"
             "echo built > /out/fixed\n");
  std::vector<std::string> args = freeze_args("admission.json");
  args.insert(args.end(), {"--env", "PATH=/usr/bin:/bin"});
  auto shell = busybox_tree_args();
  args.insert(args.end(), shell.begin(), shell.end());
  args.insert(args.end(), {"--", "/bin/sh", "/src/build.sh"});
  auto f = sealrun(args);
  ASSERT_EQ(f.status.code, 0) << f.err;
  Frozen a{dir_ / "admission.json", f.out.substr(0, 64)};
  auto c = run(a, "orig", {"--mechanism", "bwrap"});
  ASSERT_EQ(c.status.code, 0) << c.out << c.err;
  EXPECT_EQ(out("orig", "scratch"), "/scratch/x\n");
  EXPECT_EQ(out("orig", "src"), "/src\n");
  EXPECT_EQ(out("orig", "copy"), "/scratch/s\n");
  auto r = rebuild(a, "build_path", "moved");
  ASSERT_EQ(r.status.code, 1) << r.out << r.err;  // it ran, and its outputs name the place
  EXPECT_EQ(out("moved", "scratch"), "/build/sealrun-rebuild/scratch/x\n");
  EXPECT_EQ(out("moved", "copy"), "/build/sealrun-rebuild/scratch/s\n");
  EXPECT_EQ(out("moved", "src"), "/src\n");     // bound there too: a directory, not a link
  EXPECT_EQ(out("moved", "fixed"), "built\n");  // /out kept its name
  json report = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << r.out;
  std::set<std::string> differing;
  for (const auto& d : report["differences"]) differing.insert(d["path"].get<std::string>());
  EXPECT_EQ(differing, (std::set<std::string>{"scratch", "copy"}));
}

// Under rootless podman too: the personality passes through podman, conmon and the OCI runtime
// (none is set-id), the container's UTS namespace copies the domain name, and the reordered copy
// of the source is what podman binds (busybox's find lists in directory order); build_path moves
// the source while /src and /scratch still answer (bound a second time: no links in an image).
TEST_F(RunVaryTest, UnderPodmanPersonalityDomainNameAndFileOrderReachTheJob) {
  for (const char* name : {"alpha", "bravo", "charlie", "delta", "echo"})
    write_text(src_ + "/" + name, std::string(name) + "\n");
  Frozen a =
      freeze_for("podman",
                 "cat /proc/self/personality > /out/personality; uname -r > /out/uname_r; "
                 "cat /proc/sys/kernel/domainname > /out/domainname; "
                 "find /src -mindepth 1 > /out/order; pwd > /out/pwd; ls /scratch/ > /out/scratch",
                 "podman.json");
  auto c = run(a, "orig", {"--mechanism", "podman"});
  ASSERT_EQ(c.status.code, 0) << c.out << c.err;
  auto r = sealrun(
      {"rebuild", receipt_path("orig"), "--admission", a.path, "--state-dir", state_, "--mechanism",
       "podman", "--vary", "kernel,aslr,domain_host,fileordering,build_path", "--id", "varied"},
      std::nullopt, 300000);
  ASSERT_EQ(r.status.code, 1) << r.out << r.err;
  EXPECT_EQ(out("orig", "personality"), "00000000\n");
  EXPECT_EQ(out("varied", "personality"), "00060000\n");
  EXPECT_EQ(out("varied", "uname_r").rfind("2.6.", 0), 0u) << out("varied", "uname_r");
  EXPECT_EQ(out("varied", "domainname"), "sealrun-rebuild.invalid\n");
  EXPECT_NE(out("orig", "domainname"), out("varied", "domainname"));
  EXPECT_NE(out("orig", "order"), out("varied", "order"));
  EXPECT_EQ(out("orig", "order").size(), out("varied", "order").size());
  // build_path: the job starts in the moved source, and /src and /scratch still answer.
  EXPECT_EQ(out("orig", "pwd"), "/src\n");
  EXPECT_EQ(out("varied", "pwd"), "/build/sealrun-rebuild/src\n");
}

}  // namespace
}  // namespace sealrun::testing
