// SPDX-License-Identifier: Apache-2.0
// `--json` on every path (docs/run-output.md, "JSON on every path"): a command asked for JSON
// prints exactly one JSON document on stdout whatever happens — its own when it gets that far,
// else, when it fails before (a bad option, a file it cannot read, a refusal), {"error": "<what>",
// "exit": N} printed here, in one place for every command, by main(). The message is the one the
// command printed on stderr, so the two always agree.
#pragma once

#include <string_view>

namespace sealrun::cli {

// Whether the command line asks for JSON: `--json` among the words before a lone "--" (after
// it come a job's own arguments, which may say anything).
bool json_requested(int argc, const char* const* argv);

// After the command: when JSON was asked for, the command failed (`exit_code` != 0) and it printed
// no JSON document, prints {"error", "exit"} on stdout. `fallback` is the message when the command
// printed none either.
void finish_json_command(bool requested, int exit_code, std::string_view fallback);

}  // namespace sealrun::cli
