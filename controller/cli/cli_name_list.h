// SPDX-License-Identifier: Apache-2.0
// An option whose value is a comma-separated list of known names (`rebuild --vary
// hostname,umask`): a CLI11 validator that carries the names so that the CLI model
// (controller/cli/cli_model.h) reads them off the parser like an IsMember set, and the man page and
// the bash completion offer them. It accepts every value: the command parses the list itself and
// refuses an unknown name with its own message (which may say why a name is not offered).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace sealrun::cli {

// The validator's description, "[a,b,c]", is what CLI11 appends to the type name
// ("TEXT:[a,b,c]"); cli_model.cc splits it off again.
inline CLI::Validator name_list_of(const std::vector<std::string>& names) {
  std::string description = "[";
  for (size_t i = 0; i < names.size(); ++i) description += (i > 0 ? "," : "") + names[i];
  description += "]";
  return CLI::Validator([](std::string&) { return std::string(); }, description, "NAME_LIST");
}

}  // namespace sealrun::cli
