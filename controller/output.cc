// Printing helpers: see output.h.
#include "controller/output.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

namespace sealrun::cli {

void print_error(std::string_view command, const Error& error) {
  print_error(command, error.message());
}

void print_error(std::string_view command, std::string_view message) {
  fmt::print(stderr, "sealrun {}: {}\n", command, message);
}

void print_json(const nlohmann::json& doc) {
  // A string that is not UTF-8 (a host file name quoted in a message) is replaced (U+FFFD), not
  // allowed to throw and turn a report into an internal error.
  constexpr auto kReplace = nlohmann::json::error_handler_t::replace;
  std::string text = stdout_is_terminal() ? doc.dump(2, ' ', false, kReplace)
                                          : doc.dump(-1, ' ', false, kReplace);
  fmt::print("{}\n", text);
  std::fflush(stdout);
}

bool stdout_is_terminal() { return ::isatty(STDOUT_FILENO) == 1; }
bool stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

}  // namespace sealrun::cli
