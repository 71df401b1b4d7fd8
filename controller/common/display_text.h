// SPDX-License-Identifier: Apache-2.0
// Text a person reads: names and tails that came from a job, made safe to print. A job chooses its
// output names and writes its own stdout and stderr, so anything of it that reaches a terminal
// (`receipt show`, `receipt diff`, messages on stderr) could otherwise move the cursor, recolour
// the screen, fake whole lines or reverse text. Everything here is pure.
#pragma once

#include <string>
#include <string_view>

namespace sealrun::display {

// `bytes` as one line for a terminal: printable UTF-8 passes unchanged; a backslash is doubled;
// \n \r \t are written as those escapes; any other C0 control, DEL and every byte that is not part
// of valid UTF-8 as \xNN; C1 controls, line and paragraph separators and bidirectional overrides
// as \uNNNN. So the result has no control characters, and different inputs stay different.
std::string escape(std::string_view bytes);

// `escape()`, then cut to at most `max_bytes` of output (at a character boundary, "…" appended).
std::string escape_cut(std::string_view bytes, size_t max_bytes);

// Multi-line text (a log tail) for a terminal: every line escaped as above and prefixed with
// `prefix`, so no line of it can pass for a line of ours. A final newline adds no empty line.
std::string indent_lines(std::string_view text, std::string_view prefix);

// JSON text (as nlohmann dumps it: valid UTF-8, C0 controls already escaped) made safe for a
// terminal without changing what it means: DEL, C1 controls, separators and bidirectional
// overrides, which JSON may carry raw inside strings, become \uNNNN escapes.
std::string json_for_terminal(std::string_view json_text);

}  // namespace sealrun::display
