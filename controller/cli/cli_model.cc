// SPDX-License-Identifier: Apache-2.0
// Walks a CLI11 App into a CliCommand tree (controller/cli/cli_model.h).
#include "controller/cli/cli_model.h"

#include <algorithm>

namespace sealrun::cli {
namespace {

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// CLI11 appends each validator's description to the type name: "TEXT:{auto,bwrap,podman}" for an
// IsMember check, "TEXT:[hostname,umask]" for a name_list_of. Splits off the base type and the
// members of the first such set; `*list` says whether it was a list.
void split_type_name(const std::string& full, std::string* base, std::vector<std::string>* set,
                     bool* list) {
  *base = full.substr(0, full.find(':'));
  auto open = full.find(":{");
  auto list_open = full.find(":[");
  *list = list_open != std::string::npos && (open == std::string::npos || list_open < open);
  if (*list) open = list_open;
  if (open == std::string::npos) return;
  auto close = full.find(*list ? ']' : '}', open);
  if (close == std::string::npos) return;
  std::string members = full.substr(open + 2, close - open - 2);
  size_t start = 0;
  while (start <= members.size()) {
    size_t comma = members.find(',', start);
    if (comma == std::string::npos) comma = members.size();
    if (comma > start) set->push_back(members.substr(start, comma - start));
    start = comma + 1;
  }
}

CliOption describe_option(const CLI::Option& o) {
  CliOption out;
  for (const auto& s : o.get_snames()) out.names.push_back("-" + s);
  for (const auto& l : o.get_lnames()) out.names.push_back("--" + l);
  out.description = o.get_description();
  out.default_value = o.get_default_str();
  out.required = o.get_required();
  out.takes_value = o.get_items_expected_max() > 0;
  out.repeatable = o.get_expected_max() > 1 || o.get_items_expected_max() > 1;
  std::string base;
  split_type_name(o.get_type_name(), &base, &out.choices, &out.choice_list);
  out.metavar = o.get_positional() && !o.nonpositional() ? o.get_name(true) : base;
  if (out.takes_value)
    out.completion = classify_value(out.names, out.metavar, base, !out.choices.empty());
  if (out.completion == ValueCompletion::kChoices && out.choice_list)
    out.completion = ValueCompletion::kNameList;
  return out;
}

CliCommand describe(const CLI::App& app, std::vector<std::string> path) {
  CliCommand cmd;
  cmd.path = std::move(path);
  cmd.description = app.get_description();
  cmd.footer = app.get_footer();
  cmd.requires_subcommand = app.get_require_subcommand_min() > 0;
  for (const CLI::Option* o : app.get_options()) {
    if (o->get_group().empty()) continue;  // hidden
    CliOption opt = describe_option(*o);
    (opt.names.empty() ? cmd.positionals : cmd.options).push_back(std::move(opt));
  }
  for (const CLI::App* sub : app.get_subcommands(
           [](const CLI::App* a) { return !a->get_name().empty() && !a->get_group().empty(); })) {
    auto sub_path = cmd.path;
    sub_path.push_back(sub->get_name());
    cmd.subcommands.push_back(describe(*sub, std::move(sub_path)));
  }
  return cmd;
}

}  // namespace

ValueCompletion classify_value(const std::vector<std::string>& names, const std::string& metavar,
                               const std::string& type_base, bool has_choices) {
  if (has_choices) return ValueCompletion::kChoices;
  if (ends_with(metavar, "DIR")) return ValueCompletion::kDirectory;
  if (std::any_of(names.begin(), names.end(),
                  [](const std::string& n) { return ends_with(n, "-dir"); }))
    return ValueCompletion::kDirectory;
  if (type_base == "TEXT" || type_base == "FILE" || type_base == "PATH")
    return ValueCompletion::kFile;
  return ValueCompletion::kNone;
}

CliCommand describe_cli(const CLI::App& app) { return describe(app, {}); }

std::string join_words(const std::vector<std::string>& words, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += sep;
    out += words[i];
  }
  return out;
}

}  // namespace sealrun::cli
