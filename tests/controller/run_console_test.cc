// SPDX-License-Identifier: Apache-2.0
// What `run` and `rebuild` show on a stderr that is not a terminal (controller/run/run_console.h,
// issue 29), end to end with the real binary and bwrap: a silent job is said to run every 5 s
// ("job running 5 s", "job running 10 s"), --quiet shows no line of it, `rebuild` streams the
// job's `job| ` lines and its summary as `run` does; and a command whose ELF interpreter the view
// lacks is refused before it starts (exit 3, the interpreter and what to pin named), also by
// `admit check`, while a script's `#!` line is followed to its program.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <regex>

#include "core/syscall.h"
#include "tests/controller/run_test_support.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

const std::vector<std::string> kBackstop = {"limits.wall_clock_s=300"};

TEST_F(RunTest, ConsoleASilentJobIsSaidToRunEveryFiveSeconds) {
  auto a = freeze("echo started; sleep 12; echo finished", kBackstop);
  auto c = run(a, "beat");
  ASSERT_EQ(c.status.code, 0) << c.err;
  // Lines, in order: the job's first, two heartbeats 5 s apart, its last, the summary.
  std::regex beat("job running ([0-9]+) s\n");
  std::vector<int> seconds;
  for (auto it = std::sregex_iterator(c.err.begin(), c.err.end(), beat);
       it != std::sregex_iterator(); ++it)
    seconds.push_back(std::stoi((*it)[1]));
  EXPECT_EQ(seconds, (std::vector<int>{5, 10})) << c.err;
  EXPECT_LT(c.err.find("job| started\n"), c.err.find("job running 5 s\n")) << c.err;
  EXPECT_LT(c.err.find("job running 10 s\n"), c.err.find("job| finished\n")) << c.err;
  EXPECT_FALSE(has(c.err, "\r")) << "no terminal, no redrawn line";
}

TEST_F(RunTest, ConsoleQuietShowsNoHeartbeat) {
  auto a = freeze("echo quiet-job; sleep 6", kBackstop);
  auto c = run(a, "hush", {"--quiet"});
  ASSERT_EQ(c.status.code, 0) << c.err;
  EXPECT_FALSE(has(c.err, "job running")) << c.err;
  EXPECT_FALSE(has(c.err, "job|")) << c.err;
  EXPECT_TRUE(has(c.out, state_ + "/results/hush/receipt.json\n")) << c.out;
}

TEST_F(RunTest, ConsoleRebuildStreamsTheJobsLines) {
  auto a = freeze("echo rebuilt-line; echo out > /out/a", kBackstop);
  ASSERT_EQ(run(a, "orig").status.code, 0);
  const std::string receipt = state_ + "/results/orig/receipt.json";
  std::vector<std::string> args = {"rebuild", receipt, "--admission", a.path,        "--state-dir",
                                   state_,    "--id",  "again",       "--mechanism", "bwrap"};
  auto loud = sealrun(args);
  ASSERT_EQ(loud.status.code, 0) << loud.err;
  EXPECT_TRUE(has(loud.err, "job| rebuilt-line\n")) << loud.err;
  EXPECT_TRUE(has(loud.err, "sealrun rebuild: again: the job exited 0, built in")) << loud.err;
  EXPECT_TRUE(has(loud.out, "identical")) << loud.out;

  args[7] = "again-quiet";
  args.push_back("--quiet");
  auto quiet = sealrun(args);
  ASSERT_EQ(quiet.status.code, 0) << quiet.err;
  EXPECT_EQ(quiet.err, "") << "--quiet: errors only";
  EXPECT_TRUE(has(quiet.out, "identical")) << "the result is still printed: " << quiet.out;
}

// A tree holding the host's dynamically linked `true` and scripts, pinned at /opt/dyn: the view
// (busybox as /bin, the source, the toolchain) has no /lib64 and so no ELF interpreter for it.
class ElfView : public RunTest {
 protected:
  Frozen freeze_command(const std::vector<std::string>& argv, const std::string& name) {
    const std::string dyn = dir_ / "dyn";
    fs::create_directories(dyn);
    if (!fs::exists(dyn + "/true")) {
      fs::copy_file("/usr/bin/true", dyn + "/true");
      write_text(dyn + "/via-true.sh", "#!/opt/dyn/true\n");
      write_text(dyn + "/via-nothing.sh", "#!/opt/none/sh -e\n");
      write_text(dyn + "/via-busybox.sh", "#!/bin/sh\nexit 0\n");
      for (const char* f : {"/via-true.sh", "/via-nothing.sh", "/via-busybox.sh"})
        ::chmod((dyn + f).c_str(), 0755);
    }
    std::vector<std::string> args = freeze_args(name);
    auto shell = busybox_tree_args();
    args.insert(args.end(), shell.begin(), shell.end());
    args.insert(args.end(), {"--tree", dyn + "=/opt/dyn", "--"});
    args.insert(args.end(), argv.begin(), argv.end());
    auto c = sealrun(args);
    EXPECT_EQ(c.status.code, 0) << c.err;
    return {dir_ / name, c.out.substr(0, 64)};
  }
};

TEST_F(ElfView, AMissingInterpreterIsRefusedBeforeTheJobStarts) {
  auto a = freeze_command({"/opt/dyn/true"}, "dyn.json");
  auto c = run(a, "noloader");
  EXPECT_EQ(c.status.code, 3) << c.err;
  EXPECT_TRUE(has(c.err,
                  "admission refused: the view has no /lib64/ld-linux-x86-64.so.2 (the ELF "
                  "interpreter of /opt/dyn/true): pin /usr/lib64"))
      << c.err;
  EXPECT_TRUE(has(c.err, "or learn the closure")) << c.err;
  EXPECT_FALSE(has(c.err, "execvp")) << "the job never started: " << c.err;
  auto r = receipt("noloader");
  EXPECT_EQ(r["state"], "not_run") << r.dump();
  EXPECT_TRUE(r["commands"].empty()) << r.dump();

  // `admit check` says the same before any run.
  auto check = sealrun({"admit", "check", a.path, "--sha256", a.sha256, "--state-dir", state_});
  EXPECT_EQ(check.status.code, 3) << check.out << check.err;
  EXPECT_TRUE(has(check.err, "the view has no /lib64/ld-linux-x86-64.so.2")) << check.err;
}

TEST_F(ElfView, AScriptsLineIsFollowedOnce) {
  auto via_true = freeze_command({"/opt/dyn/via-true.sh"}, "via-true.json");
  auto c = run(via_true, "viatrue");
  EXPECT_EQ(c.status.code, 3) << c.err;
  EXPECT_TRUE(has(c.err,
                  "the view has no /lib64/ld-linux-x86-64.so.2 (the ELF interpreter of "
                  "/opt/dyn/true)"))
      << c.err;

  auto via_nothing = freeze_command({"/opt/dyn/via-nothing.sh"}, "via-nothing.json");
  c = run(via_nothing, "vianothing");
  EXPECT_EQ(c.status.code, 3) << c.err;
  EXPECT_TRUE(has(c.err,
                  "the view has no /opt/none/sh (the interpreter on the #! line of "
                  "/opt/dyn/via-nothing.sh)"))
      << c.err;

  // Busybox is static: a script run by it starts, and runs.
  auto via_busybox = freeze_command({"/opt/dyn/via-busybox.sh"}, "via-busybox.json");
  c = run(via_busybox, "viabusybox");
  EXPECT_EQ(c.status.code, 0) << c.err;
  EXPECT_EQ(count(c.err, "the view has no"), 0u) << c.err;
}

}  // namespace
}  // namespace sealrun::testing
