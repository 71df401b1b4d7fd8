// SPDX-License-Identifier: Apache-2.0
// Renders the bash completion script (controller/cli/bash_completion.h). The command tree becomes
// three lookup functions made of `case` arms (words of a command, kind of an option's value,
// kind of a positional); the walker below them is fixed text that only reads those tables.
#include "controller/cli/bash_completion.h"

#include <fmt/format.h>

namespace sealrun::cli {
namespace {

// Single-quoted for bash; option names and choices are plain words, but a quote must not end it.
std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string kind_of(const CliOption& o) {
  if (!o.takes_value) return "flag";
  switch (o.completion) {
    case ValueCompletion::kChoices:
      return "choices:" + join_words(o.choices, " ");
    case ValueCompletion::kNameList:
      return "list:" + join_words(o.choices, " ");
    case ValueCompletion::kDirectory:
      return "dir";
    case ValueCompletion::kFile:
      return "file";
    case ValueCompletion::kNone:
      break;
  }
  return "none";
}

struct Tables {
  std::string words, subcommands, options, positionals;
};

void add_command(const CliCommand& cmd, Tables* t) {
  std::string path = join_words(cmd.path, " ");
  std::vector<std::string> subs, words;
  for (const auto& s : cmd.subcommands) subs.push_back(s.path.back());
  words = subs;
  for (const auto& o : cmd.options) words.insert(words.end(), o.names.begin(), o.names.end());
  t->words += fmt::format("    {}) echo {} ;;\n", quote(path), quote(join_words(words, " ")));
  if (!subs.empty())
    t->subcommands +=
        fmt::format("    {}) echo {} ;;\n", quote(path), quote(join_words(subs, " ")));
  for (const auto& o : cmd.options)
    for (const auto& n : o.names)
      t->options += fmt::format("    {}) echo {} ;;\n", quote(path + "|" + n), quote(kind_of(o)));
  // Positional N completes like the N-th positional; past the last, like the last if that one
  // takes several values (its arm matches every index: the earlier ones are matched first).
  for (size_t i = 0; i < cmd.positionals.size(); ++i) {
    const CliOption& p = cmd.positionals[i];
    bool last_many = i + 1 == cmd.positionals.size() && p.repeatable;
    std::string pattern =
        last_many ? quote(path + "|") + "*" : quote(path + "|" + std::to_string(i));
    t->positionals += fmt::format("    {}) echo {} ;;\n", pattern, quote(kind_of(p)));
  }
  for (const auto& s : cmd.subcommands) add_command(s, t);
}

// The walker: finds the command path and the positional index of the word being completed, then
// offers what the tables say. Fixed text; only the tables above it change with the commands.
constexpr const char* kWalker = R"BASH(
# Offers completions of kind $1 (flag|none|file|dir|choices:A B ...|list:A B ...) for the word $2.
_sealrun_complete_kind() {
  local kind=$1 cur=$2
  case $kind in
    file)
      if declare -F _filedir >/dev/null; then _filedir; else
        compopt -o filenames 2>/dev/null
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
      fi ;;
    dir)
      if declare -F _filedir >/dev/null; then _filedir -d; else
        compopt -o filenames 2>/dev/null
        mapfile -t COMPREPLY < <(compgen -d -- "$cur")
      fi ;;
    choices:*) mapfile -t COMPREPLY < <(compgen -W "${kind#choices:}" -- "$cur") ;;
    list:*)
      # A comma-separated list: complete the name after the last comma, keep what is before it.
      local done="" name=$cur
      if [[ $cur == *,* ]]; then done=${cur%,*},; name=${cur##*,}; fi
      mapfile -t COMPREPLY < <(compgen -P "$done" -W "${kind#list:}" -- "$name")
      compopt -o nospace 2>/dev/null ;;
    *) COMPREPLY=() ;;
  esac
}

_sealrun() {
  local cur prev words cword split=false
  if declare -F _init_completion >/dev/null; then
    _init_completion -s || return
  else
    words=("${COMP_WORDS[@]}")
    cword=$COMP_CWORD
    cur=${words[cword]}
    prev=${words[cword - 1]}
    # Without bash-completion, "--out=x" arrives as "--out" "=" "x".
    if [[ $cur == "=" ]]; then prev=${words[cword - 1]}; cur=""; split=true
    elif [[ $prev == "=" ]]; then prev=${words[cword - 2]}; split=true; fi
  fi
  local path="" npos=0 dashdash=-1 expect=false i word kind
  for ((i = 1; i < cword; i++)); do
    word=${words[i]}
    if [[ $word == "=" ]]; then expect=true; continue; fi  # "--out" "=" "x": x is the value
    if $expect; then expect=false; continue; fi
    if ((dashdash >= 0)); then continue; fi
    case $word in
      --) dashdash=$i ;;
      --*=*) ;;
      -*)
        kind=$(_sealrun_option "$path" "$word")
        [[ $kind != flag && $kind != unknown ]] && expect=true ;;
      *)
        if [[ " $(_sealrun_subcommands "$path") " == *" $word "* ]]; then
          path=${path:+$path }$word
          npos=0
        else
          npos=$((npos + 1))
        fi ;;
    esac
  done
  # The value of an option: "--opt VALUE" (the word before is the option) or "--opt=VALUE".
  if $expect || $split; then
    kind=$(_sealrun_option "$path" "$prev")
    if [[ $kind != flag && $kind != unknown ]]; then
      _sealrun_complete_kind "$kind" "$cur"
      return
    fi
  fi
  # After "--": the job's command, then its arguments (paths).
  if ((dashdash >= 0)); then
    if ((cword == dashdash + 1)); then
      mapfile -t COMPREPLY < <(compgen -c -- "$cur")
    else
      _sealrun_complete_kind file "$cur"
    fi
    return
  fi
  if [[ $cur == -* ]]; then
    local w opts=()
    for w in $(_sealrun_words "$path"); do [[ $w == -* ]] && opts+=("$w"); done
    mapfile -t COMPREPLY < <(compgen -W "${opts[*]}" -- "$cur")
    return
  fi
  local subs
  subs=$(_sealrun_subcommands "$path")
  if [[ -n $subs ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$subs" -- "$cur")
    return
  fi
  _sealrun_complete_kind "$(_sealrun_positional "$path" "$npos")" "$cur"
}

complete -F _sealrun sealrun
)BASH";

}  // namespace

std::string render_bash_completion(const CliCommand& root) {
  Tables t;
  add_command(root, &t);
  std::string out;
  out += "# bash completion for sealrun(1)\n";
  out +=
      "# Generated from sealrun's command-line definitions by `sealrun __generate "
      "bash-completion`.\n\n";
  out += "# The sub-commands and options of the command at path $1 (\"\", \"receipt show\").\n";
  out += "_sealrun_words() {\n  case $1 in\n" + t.words + "  esac\n}\n\n";
  out += "# The sub-commands alone.\n";
  out += "_sealrun_subcommands() {\n  case $1 in\n" + t.subcommands + "  esac\n}\n\n";
  out += "# How the value of option $2 of command $1 completes (flag: it takes none).\n";
  out += "_sealrun_option() {\n  case \"$1|$2\" in\n" + t.options +
         "    *) echo unknown ;;\n  esac\n}\n\n";
  out += "# How the positional argument at index $2 of command $1 completes.\n";
  out += "_sealrun_positional() {\n  case \"$1|$2\" in\n" + t.positionals +
         "    *) echo none ;;\n  esac\n}\n";
  out += kWalker;
  return out;
}

}  // namespace sealrun::cli
