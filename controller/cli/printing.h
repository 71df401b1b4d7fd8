// SPDX-License-Identifier: Apache-2.0
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
// Every `--json` command prints exactly one JSON document on stdout on every path: when a command
// fails before printing its own, main() prints {"error": <the last message of print_error>,
// "exit": N} in its place (json_failure.h). These let it know what happened.
bool json_document_printed();
void note_json_document_printed();  // for a command that writes its JSON without print_json
void note_error_message(std::string_view message);  // print_error() does this itself
const std::string& last_error_message();
// True when stdout (or stderr, for progress) is a terminal.
bool stdout_is_terminal();
bool stderr_is_terminal();

}  // namespace sealrun::cli
