// SPDX-License-Identifier: Apache-2.0
// `cmake --install build --prefix P` (label packaging): the executable, the man page and the bash
// completion land where docs/contract.md says, the installed program runs, and the generated files
// are current (byte-equal to what the executable generates now), cover every command, render
// without groff warnings, and complete the real commands in a bash with bash-completion loaded.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "controller/run/variations.h"
#include "core/mechanism_kind.h"
#include "tests/packaging/shell.h"
#include "tests/support/temp_dir.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;

const std::string kMan = "/share/man/man1/sealrun.1";
const std::string kCompletion = "/share/bash-completion/completions/sealrun";

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    if (nl > start) out.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return out;
}

TEST(Install, PutsTheExecutableManPageAndCompletionUnderThePrefix) {
  TempDir dir;
  std::string prefix = dir / "prefix";
  auto c = shell("cmake --install " + shell_quote(binary_dir()) + " --prefix " + prefix);
  ASSERT_EQ(c.status.code, 0) << c.out << c.err;
  EXPECT_EQ(::access((prefix + "/bin/sealrun").c_str(), X_OK), 0);
  EXPECT_TRUE(fs::is_regular_file(prefix + kMan));
  EXPECT_TRUE(fs::is_regular_file(prefix + kCompletion));
  EXPECT_TRUE(fs::is_regular_file(prefix + "/share/sealrun/examples/hello/build.sh"));
  auto installed = shell(prefix + "/bin/sealrun --version");
  auto built = shell(shell_quote(sealrun_path()) + " --version");
  ASSERT_EQ(installed.status.code, 0) << installed.err;
  EXPECT_EQ(installed.out, built.out);
  EXPECT_EQ(read_text(prefix + kMan), read_text(binary_dir() + kMan));
  // `sealrun runner` execs its helper from ../libexec/sealrun/: the installed pair finds it (the
  // helper's own check of --listen answers, exit 2).
  EXPECT_EQ(::access((prefix + "/libexec/sealrun/sealrun-runner").c_str(), X_OK), 0);
  auto runner =
      shell(prefix + "/bin/sealrun runner --listen nowhere --build-dir /tmp --toolchain " +
            "/tmp 2>&1 && echo \"exit 0\" || echo \"exit $?\"");
  EXPECT_NE(runner.out.find("expected unix:PATH or HOST:PORT"), std::string::npos) << runner.out;
  EXPECT_NE(runner.out.find("exit 2"), std::string::npos) << runner.out;
}

TEST(Install, GeneratedFilesAreCurrentAndCoverEveryCommand) {
  for (const auto& [what, file] : {std::pair{"man", kMan}, {"bash-completion", kCompletion}}) {
    auto now = shell(shell_quote(sealrun_path()) + " __generate " + what);
    ASSERT_EQ(now.status.code, 0) << now.err;
    EXPECT_EQ(now.out, read_text(binary_dir() + file)) << file << " is stale";
  }
  std::string page = read_text(binary_dir() + kMan);
  // Every command `--help` lists, at every depth, has its section in the page.
  std::vector<std::string> pending = {""};
  int commands = 0;
  while (!pending.empty()) {
    std::string path = pending.back();
    pending.pop_back();
    auto help = shell(shell_quote(sealrun_path()) + " " + path + " --help");
    ASSERT_EQ(help.status.code, 0) << path << ": " << help.err;
    bool in_subcommands = false;
    for (const auto& line : lines(help.out)) {
      if (line.rfind("Subcommands:", 0) == 0) {
        in_subcommands = true;
        continue;
      }
      if (!in_subcommands) continue;
      if (line[0] != ' ') break;
      // "  name    description"; a description's continuation lines are indented further.
      if (line.size() < 3 || line[1] != ' ' || line[2] == ' ') continue;
      std::string name = line.substr(2, line.find(' ', 2) - 2);
      std::string full = path.empty() ? name : path + " " + name;
      EXPECT_NE(page.find(".SS \"sealrun " + full + "\""), std::string::npos) << full;
      ++commands;
      pending.push_back(full);
    }
  }
  EXPECT_GE(commands, 15);
  for (const char* want : {"\\fB\\-\\-sha256\\fR", "\\fB\\-\\-state\\-dir\\fR",
                           ".SH \"EXIT STATUS\"", "SEALRUN_JOB_USER", "sealrun " SEALRUN_VERSION})
    EXPECT_NE(page.find(want), std::string::npos) << want;
}

TEST(Install, ManPageRendersWithoutWarnings) {
  auto c = shell("MANWIDTH=100 man --warnings -E UTF-8 -l " + shell_quote(binary_dir() + kMan));
  ASSERT_EQ(c.status.code, 0) << c.err;
  EXPECT_EQ(c.err, "");
  EXPECT_NE(c.out.find("sealrun receipt show"), std::string::npos) << c.out.substr(0, 2000);
  EXPECT_NE(c.out.find("--mechanism"), std::string::npos);
}

// Completes `line` (words; the last is the one being completed) with the generated script and
// bash-completion's own helpers loaded, as an interactive user's bash has them.
std::vector<std::string> complete(const std::vector<std::string>& words, const std::string& cwd) {
  std::string args;
  for (const auto& w : words) args += " " + shell_quote(w);
  auto c = shell(
      "set +eu\nsource /usr/share/bash-completion/bash_completion\n"
      "source " +
          shell_quote(binary_dir() + kCompletion) +
          "\n"
          "set -- " +
          args +
          "\n"
          "COMP_WORDS=(\"$@\"); COMP_CWORD=$(($# - 1)); COMP_LINE=\"$*\"; "
          "COMP_POINT=${#COMP_LINE}\n"
          "_sealrun sealrun \"${COMP_WORDS[COMP_CWORD]}\" \"${COMP_WORDS[COMP_CWORD-1]}\"\n"
          "printf '%s\\n' \"${COMPREPLY[@]}\" | sort",
      cwd);
  EXPECT_EQ(c.status.code, 0) << c.err;
  return lines(c.out);
}

using Words = std::vector<std::string>;

TEST(Install, BashCompletesTheRealCommandsWithBashCompletionLoaded) {
  ASSERT_TRUE(fs::exists("/usr/share/bash-completion/bash_completion"))
      << "bash-completion is missing (.ci/packages.txt installs it)";
  TempDir dir;
  fs::create_directory(dir / "state");
  write_text(dir / "stuff.json", "{}");
  EXPECT_EQ(complete({"sealrun", "receipt", ""}, dir.str()),
            (Words{"diff", "export", "list", "report", "show", "verify"}));
  EXPECT_EQ(complete({"sealrun", "adm"}, dir.str()), (Words{"admit"}));
  EXPECT_EQ(complete({"sealrun", "admit", "fr"}, dir.str()), (Words{"freeze"}));
  EXPECT_EQ(complete({"sealrun", "run", "x.json", "--mechanism", ""}, dir.str()),
            (Words{"auto", "bwrap", "podman"}));
  EXPECT_EQ(complete({"sealrun", "run", "--mode", "r"}, dir.str()), (Words{"report-only"}));
  EXPECT_EQ(complete({"sealrun", "run", "--state-dir", "s"}, dir.str()), (Words{"state"}));
  EXPECT_EQ(complete({"sealrun", "run", "s"}, dir.str()), (Words{"state", "stuff.json"}));
  EXPECT_EQ(complete({"sealrun", "receipt", "show", "--j"}, dir.str()), (Words{"--json"}));
  EXPECT_EQ(complete({"sealrun", "--ver"}, dir.str()), (Words{"--version"}));
  auto run_opts = complete({"sealrun", "run", "--"}, dir.str());
  for (const char* o : {"--sha256", "--id", "--mechanism", "--mode", "--state-dir", "--json"})
    EXPECT_NE(std::find(run_opts.begin(), run_opts.end(), o), run_opts.end()) << o;
  // The hidden generator is nobody's command.
  EXPECT_EQ(complete({"sealrun", "__"}, dir.str()), (Words{}));
}

// The values of rebuild's --vary (reprotest's names, as controller/run/variations.h lists them, and
// "all") and of --mechanism (the mechanism registry, and "auto") are offered, never file names.
TEST(Install, BashCompletesVaryAndMechanismValues) {
  TempDir dir;
  write_text(dir / "hostname.json", "{}");  // a file that would match if files were offered
  Words vary(std::begin(run::kVariationNames), std::end(run::kVariationNames));
  vary.emplace_back("all");
  std::sort(vary.begin(), vary.end());
  EXPECT_EQ(complete({"sealrun", "rebuild", "r.json", "--vary", ""}, dir.str()), vary);
  Words after_umask;
  for (const auto& v : vary)
    if (v.rfind("h", 0) == 0) after_umask.push_back("umask," + v);
  ASSERT_FALSE(after_umask.empty());
  EXPECT_EQ(complete({"sealrun", "rebuild", "--vary", "umask,h"}, dir.str()), after_umask);
  Words mechanisms = {"auto"};
  for (MechanismKind k : kMechanismKinds) mechanisms.emplace_back(mechanism_kind_name(k));
  std::sort(mechanisms.begin(), mechanisms.end());
  for (const char* cmd : {"run", "rebuild"})
    EXPECT_EQ(complete({"sealrun", cmd, "--mechanism", ""}, dir.str()), mechanisms) << cmd;
  // The man page says which names --vary takes.
  std::string page = read_text(binary_dir() + kMan);
  for (const auto& v : vary) EXPECT_NE(page.find(v), std::string::npos) << v;
}

// The man page and the completion are made with the executable, whichever target was built: they
// are never older than it (a build of `--target sealrun` alone left them stale or missing).
TEST(Install, GeneratedFilesAreNoOlderThanTheExecutable) {
  auto exe = fs::last_write_time(sealrun_path());
  for (const auto& f : {kMan, kCompletion}) {
    ASSERT_TRUE(fs::exists(binary_dir() + f)) << f;
    EXPECT_GE(fs::last_write_time(binary_dir() + f), exe) << f;
  }
}

}  // namespace
}  // namespace sealrun::testing
