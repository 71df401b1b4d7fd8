// SPDX-License-Identifier: Apache-2.0
// A plain description of sealrun's command line, read off the CLI11 definitions themselves, so
// that the man page and the shell completion are generated from what the parser accepts and a
// command added later appears in both without touching the generators. Hidden commands and
// options (CLI11 group "") are left out, like CLI11's own --help leaves them out.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace sealrun::cli {

// What a shell should offer for an option's value.
enum class ValueCompletion {
  kNone,       // a number, a digest, an id: nothing to offer
  kFile,       // any path
  kDirectory,  // a directory
  kChoices,    // one of `choices` (CLI::IsMember)
  kNameList,   // a comma-separated list of `choices` (name_list_of, controller/cli/cli_name_list.h)
};

struct CliOption {
  std::vector<std::string> names;  // "-h", "--help"; empty for a positional
  std::string metavar;             // the positional's name, or the value's type ("TEXT", "INT")
  std::string description;
  std::string default_value;  // as --help shows it; empty if none
  bool takes_value = false;   // false for a flag
  bool repeatable = false;    // may be given more than once / takes several values
  bool required = false;
  std::vector<std::string> choices;
  bool choice_list = false;  // the value lists several of `choices`, comma-separated
  ValueCompletion completion = ValueCompletion::kNone;
};

struct CliCommand {
  std::vector<std::string> path;  // {} for the program, {"receipt", "show"} for a sub-command
  std::string description;
  std::string footer;
  std::vector<CliOption> options;      // named options and flags, in definition order
  std::vector<CliOption> positionals;  // in order
  std::vector<CliCommand> subcommands;
  bool requires_subcommand = false;
};

// "receipt show" from {"receipt", "show"} and " ": the generators' one string helper.
std::string join_words(const std::vector<std::string>& words, std::string_view sep);

// Reads `app` (the program's root) and everything below it.
CliCommand describe_cli(const CLI::App& app);

// How an option's value completes, from CLI11's metadata alone (pure; unit-tested):
//   an IsMember check                              -> kChoices
//   a name or metavar ending in DIR / -dir         -> kDirectory
//   type TEXT (CLI11's default), FILE or PATH      -> kFile
//   anything else (INT, UINT, FLOAT, or a type name set with ->type_name("HEX")) -> kNone
// So a new option whose value is not a path says so with ->type_name("ID") or similar.
ValueCompletion classify_value(const std::vector<std::string>& names, const std::string& metavar,
                               const std::string& type_base, bool has_choices);

}  // namespace sealrun::cli
