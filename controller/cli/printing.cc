// SPDX-License-Identifier: Apache-2.0
// Printing helpers: see output.h.
#include "controller/cli/printing.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

#include "controller/common/display_text.h"

namespace sealrun::cli {

namespace {
bool g_json_printed = false;
std::string& last_error() {
  static std::string message;
  return message;
}
}  // namespace

bool json_document_printed() { return g_json_printed; }
void note_json_document_printed() { g_json_printed = true; }
void note_error_message(std::string_view message) { last_error() = message; }
const std::string& last_error_message() { return last_error(); }

void print_error(std::string_view command, const Error& error) {
  print_error(command, error.message());
}

void print_error(std::string_view command, std::string_view message) {
  fmt::print(stderr, "sealrun {}: {}\n", command, message);
  note_error_message(message);
}

void print_json(const nlohmann::json& doc) {
  // A string that is not UTF-8 (a host file name quoted in a message) is replaced (U+FFFD), not
  // allowed to throw and turn a report into an internal error.
  constexpr auto kReplace = nlohmann::json::error_handler_t::replace;
  std::string text =
      stdout_is_terminal() ? doc.dump(2, ' ', false, kReplace) : doc.dump(-1, ' ', false, kReplace);
  // JSON may carry C1 controls and bidirectional marks raw inside strings; \uNNNN says the same
  // thing and cannot act on a terminal (display_text.h).
  fmt::print("{}\n", display::json_for_terminal(text));
  std::fflush(stdout);
  note_json_document_printed();
}

bool stdout_is_terminal() { return ::isatty(STDOUT_FILENO) == 1; }
bool stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

}  // namespace sealrun::cli
