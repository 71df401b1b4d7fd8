// SPDX-License-Identifier: Apache-2.0
// One JSON document on every path of a --json command: see json_failure.h.
#include "controller/cli/json_failure.h"

#include <cstring>
#include <nlohmann/json.hpp>

#include "controller/cli/printing.h"

namespace sealrun::cli {

bool json_requested(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) return false;
    if (std::strcmp(argv[i], "--json") == 0) return true;
  }
  return false;
}

void finish_json_command(bool requested, int exit_code, std::string_view fallback) {
  if (!requested || exit_code == 0 || json_document_printed()) return;
  std::string message = last_error_message();
  if (message.empty()) message = fallback;
  print_json({{"error", message}, {"exit", exit_code}});
}

}  // namespace sealrun::cli
