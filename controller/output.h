// Small helpers every command uses to speak to a person or a script, so that all commands print
// errors and JSON the same way.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/result.h"

namespace sealrun::cli {

// "sealrun <command>: <message>" on stderr.
void print_error(std::string_view command, const Error& error);
void print_error(std::string_view command, std::string_view message);
// One JSON document on stdout, pretty-printed for a terminal, compact otherwise; always a newline.
// Strings that are not UTF-8 are printed with U+FFFD in place of their bad bytes.
void print_json(const nlohmann::json& doc);
// True when stdout (or stderr, for progress) is a terminal.
bool stdout_is_terminal();
bool stderr_is_terminal();

}  // namespace sealrun::cli
