// SPDX-License-Identifier: Apache-2.0
// The man page and bash completion generators over a CLI11 app made here (unit): what the model
// reads off CLI11, that a command added to the app appears in both outputs without any change to
// the generators, roff escaping, and the completion script's behaviour in a real bash.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "controller/cli/bash_completion.h"
#include "controller/cli/cli_model.h"
#include "controller/cli/cli_name_list.h"
#include "controller/cli/man_page.h"
#include "core/process.h"
#include "tests/support/temp_dir.h"

namespace sealrun::cli {
namespace {

using sealrun::testing::TempDir;
using sealrun::testing::write_text;

// A small program shaped like sealrun: nested sub-commands, choices, a directory option, a
// numeric option, a repeatable positional, a hidden command and a hidden option.
struct ToyCli {
  CLI::App app{"toy: a program for the generator tests", "toy"};
  std::string s;
  std::string mechanism = "auto";
  std::vector<std::string> v;
  int n = 3;
  bool b = false;
  ToyCli() {
    app.require_subcommand(1);
    app.set_version_flag("--version", "toy 1");
    auto* receipt = app.add_subcommand("receipt", "Review receipts");
    auto* show = receipt->add_subcommand("show", "A summary of a receipt");
    show->add_option("RECEIPT", s, "receipt.json")->required();
    show->add_flag("--json", b, "print JSON");
    receipt->add_subcommand("verify", "Check a receipt")->add_option("RECEIPT", s, "receipt");
    auto* run = app.add_subcommand("run", "Run an admission.\nExit: 0 built");
    run->add_option("ADMISSION", s, "the admission")->required();
    run->add_option("--mechanism", mechanism, "auto | bwrap")
        ->check(CLI::IsMember({"auto", "bwrap"}))
        ->capture_default_str();
    run->add_option("--state-dir", s, "state")->capture_default_str();
    run->add_option("--threads", n, "how many")->capture_default_str();
    run->add_option("--sha256", s, "digest")->type_name("HEX")->required();
    run->add_option("--secret", s, "hidden")->group("");
    run->add_option("--vary", s, "comma-separated names")
        ->check(name_list_of({"hostname", "home", "umask", "all"}));
    auto* freeze = app.add_subcommand("freeze", "Freeze");
    freeze->add_option("--host-tool", v, "a tool (repeatable)");
    freeze->add_option("ARGV", v, "the command");
    app.add_subcommand("__hidden", "not for users")->group("");
  }
};

const CliCommand* find(const CliCommand& c, const std::string& name) {
  for (const auto& s : c.subcommands)
    if (s.path.back() == name) return &s;
  return nullptr;
}

const CliOption* option(const CliCommand& c, const std::string& name) {
  for (const auto& o : c.options)
    for (const auto& n : o.names)
      if (n == name) return &o;
  return nullptr;
}

TEST(CliModel, ReadsCommandsOptionsAndPositionalsOffCli11) {
  ToyCli toy;
  CliCommand root = describe_cli(toy.app);
  EXPECT_TRUE(root.requires_subcommand);
  ASSERT_EQ(root.subcommands.size(), 3u);  // __hidden is left out
  EXPECT_EQ(find(root, "__hidden"), nullptr);
  ASSERT_NE(option(root, "--version"), nullptr);
  ASSERT_NE(option(root, "--help"), nullptr);

  const CliCommand* receipt = find(root, "receipt");
  ASSERT_NE(receipt, nullptr);
  const CliCommand* show = find(*receipt, "show");
  ASSERT_NE(show, nullptr);
  EXPECT_EQ(show->path, (std::vector<std::string>{"receipt", "show"}));
  ASSERT_EQ(show->positionals.size(), 1u);
  EXPECT_EQ(show->positionals[0].metavar, "RECEIPT");
  EXPECT_TRUE(show->positionals[0].required);
  EXPECT_EQ(show->positionals[0].completion, ValueCompletion::kFile);
  EXPECT_FALSE(option(*show, "--json")->takes_value);

  const CliCommand* run = find(root, "run");
  const CliOption* mech = option(*run, "--mechanism");
  EXPECT_EQ(mech->choices, (std::vector<std::string>{"auto", "bwrap"}));
  EXPECT_EQ(mech->completion, ValueCompletion::kChoices);
  EXPECT_EQ(mech->default_value, "auto");
  EXPECT_TRUE(option(*run, "--sha256")->required);
  EXPECT_EQ(option(*run, "--sha256")->completion, ValueCompletion::kNone);
  EXPECT_EQ(option(*run, "--secret"), nullptr);  // hidden
  const CliOption* vary = option(*run, "--vary");
  EXPECT_EQ(vary->choices, (std::vector<std::string>{"hostname", "home", "umask", "all"}));
  EXPECT_TRUE(vary->choice_list);
  EXPECT_EQ(vary->completion, ValueCompletion::kNameList);
  EXPECT_FALSE(mech->choice_list);
  const CliCommand* freeze = find(root, "freeze");
  EXPECT_TRUE(option(*freeze, "--host-tool")->repeatable);
  EXPECT_TRUE(freeze->positionals.at(0).repeatable);
}

TEST(CliModel, ClassifiesValues) {
  struct Case {
    std::vector<std::string> names;
    std::string metavar, type;
    bool choices;
    ValueCompletion want;
  };
  for (const Case& c : std::vector<Case>{
           {{"--mode"}, "TEXT", "TEXT", true, ValueCompletion::kChoices},
           {{"--state-dir"}, "TEXT", "TEXT", false, ValueCompletion::kDirectory},
           {{}, "DIR", "TEXT", false, ValueCompletion::kDirectory},
           {{"--out"}, "TEXT", "TEXT", false, ValueCompletion::kFile},
           {{"--key"}, "FILE", "FILE", false, ValueCompletion::kFile},
           {{"--threads"}, "UINT", "UINT", false, ValueCompletion::kNone},
           {{"--grace-ms"}, "INT", "INT", false, ValueCompletion::kNone},
           {{"--sha256"}, "HEX", "HEX", false, ValueCompletion::kNone},
       })
    EXPECT_EQ(classify_value(c.names, c.metavar, c.type, c.choices), c.want)
        << (c.names.empty() ? c.metavar : c.names[0]);
}

TEST(ManPage, ListsEveryCommandWithOptionsDefaultsAndExitStatus) {
  ToyCli toy;
  std::string page = render_man_page(describe_cli(toy.app), "toy 1");
  EXPECT_NE(page.find(".TH SEALRUN 1 \"\" \"toy 1\""), std::string::npos) << page;
  for (const char* want :
       {".SS \"sealrun receipt show\"", ".SS \"sealrun receipt verify\"", ".SS \"sealrun run\"",
        ".SS \"sealrun freeze\"", "\\fB\\-\\-json\\fR", "one of: auto, bwrap", "default: 3",
        "\\fB\\-\\-sha256\\fR \\fIHEX\\fR", "repeatable", ".SH \"EXIT STATUS\"", "Exit: 0 built"})
    EXPECT_NE(page.find(want), std::string::npos) << want << "\n" << page;
  EXPECT_EQ(page.find("__hidden"), std::string::npos);
  EXPECT_EQ(page.find("secret"), std::string::npos);
}

TEST(ManPage, ANewCommandAppearsWithoutTouchingTheGenerator) {
  ToyCli toy;
  std::string flag;
  toy.app.add_subcommand("frobnicate", "Frobnicate the widgets")
      ->add_option("--widget-dir", flag, "where the widgets are");
  CliCommand root = describe_cli(toy.app);
  EXPECT_NE(render_man_page(root, "toy 1").find(".SS \"sealrun frobnicate\""), std::string::npos);
  std::string script = render_bash_completion(root);
  EXPECT_NE(script.find("frobnicate"), std::string::npos);
  EXPECT_NE(script.find("'frobnicate|--widget-dir') echo 'dir'"), std::string::npos) << script;
}

TEST(ManPage, EscapesRoff) {
  EXPECT_EQ(roff_escape("a-b\\c"), "a\\-b\\ec");
  EXPECT_EQ(roff_escape(".TH x"), "\\&.TH x");
  EXPECT_EQ(roff_escape("x\n'y"), "x\n\\&'y");
}

// Completes `words` (the last one is the word being completed) with `script` in a real bash,
// without bash-completion's helpers loaded (the fallback path); returns COMPREPLY, sorted.
std::vector<std::string> complete(const std::string& script, const std::vector<std::string>& words,
                                  const std::string& cwd) {
  SpawnOptions o;
  o.argv = {"/bin/bash",
            "--norc",
            "--noprofile",
            "-c",
            "source \"$1\"; shift; COMP_WORDS=(\"$@\"); COMP_CWORD=$(($# - 1)); _sealrun; "
            "printf '%s\\n' \"${COMPREPLY[@]}\" | sort",
            "bash",
            script};
  o.argv.insert(o.argv.end(), words.begin(), words.end());
  o.cwd = cwd;
  auto r = run_capture(o, 20000);
  EXPECT_TRUE(r.ok() && r->status.success()) << (r.ok() ? r->err : r.error().message());
  std::vector<std::string> out;
  if (!r.ok()) return out;
  size_t start = 0;
  while (start < r->out.size()) {
    size_t nl = r->out.find('\n', start);
    std::string line = r->out.substr(start, nl - start);
    if (!line.empty()) out.push_back(line);
    start = nl == std::string::npos ? r->out.size() : nl + 1;
  }
  return out;
}

using Words = std::vector<std::string>;

TEST(BashCompletion, CompletesCommandsOptionsChoicesAndPaths) {
  ToyCli toy;
  TempDir dir;
  std::string script = dir / "toy.bash";
  write_text(script, render_bash_completion(describe_cli(toy.app)));
  std::filesystem::create_directory(dir / "adir");
  write_text(dir / "afile.json", "{}");

  EXPECT_EQ(complete(script, {"toy", ""}, dir.str()), (Words{"freeze", "receipt", "run"}));
  EXPECT_EQ(complete(script, {"toy", "re"}, dir.str()), (Words{"receipt"}));
  EXPECT_EQ(complete(script, {"toy", "receipt", ""}, dir.str()), (Words{"show", "verify"}));
  EXPECT_EQ(complete(script, {"toy", "receipt", "show", "--"}, dir.str()),
            (Words{"--help", "--json"}));
  EXPECT_EQ(complete(script, {"toy", "receipt", "show", "a"}, dir.str()),
            (Words{"adir", "afile.json"}));
  EXPECT_EQ(complete(script, {"toy", "run", "x", "--mechanism", ""}, dir.str()),
            (Words{"auto", "bwrap"}));
  EXPECT_EQ(complete(script, {"toy", "run", "--state-dir", "a"}, dir.str()), (Words{"adir"}));
  EXPECT_EQ(complete(script, {"toy", "run", "--threads", ""}, dir.str()), (Words{}));
  EXPECT_EQ(complete(script, {"toy", "run", "--sha256", ""}, dir.str()), (Words{}));
  // "--mechanism=b": bash splits at '=' (COMP_WORDBREAKS) into "--mechanism" "=" "b".
  EXPECT_EQ(complete(script, {"toy", "run", "--mechanism", "=", "b"}, dir.str()), (Words{"bwrap"}));
  // An option's value is not taken for a sub-command or a positional.
  EXPECT_EQ(complete(script, {"toy", "run", "--mechanism", "auto", "--st"}, dir.str()),
            (Words{"--state-dir"}));
  // A comma-separated list: each name after the last comma, what is before it kept.
  EXPECT_EQ(complete(script, {"toy", "run", "--vary", ""}, dir.str()),
            (Words{"all", "home", "hostname", "umask"}));
  EXPECT_EQ(complete(script, {"toy", "run", "--vary", "ho"}, dir.str()),
            (Words{"home", "hostname"}));
  EXPECT_EQ(complete(script, {"toy", "run", "--vary", "umask,ho"}, dir.str()),
            (Words{"umask,home", "umask,hostname"}));
  EXPECT_EQ(complete(script, {"toy", "run", "--vary", "umask,home,u"}, dir.str()),
            (Words{"umask,home,umask"}));
  // The hidden command and option are not offered.
  EXPECT_EQ(complete(script, {"toy", "__"}, dir.str()), (Words{}));
  EXPECT_EQ(complete(script, {"toy", "run", "--se"}, dir.str()), (Words{}));
}

}  // namespace
}  // namespace sealrun::cli
