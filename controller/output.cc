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
  std::string text = stdout_is_terminal() ? doc.dump(2) : doc.dump();
  fmt::print("{}\n", text);
  std::fflush(stdout);
}

bool stdout_is_terminal() { return ::isatty(STDOUT_FILENO) == 1; }
bool stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

}  // namespace sealrun::cli
