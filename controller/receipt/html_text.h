// SPDX-License-Identifier: Apache-2.0
// Text from a receipt made safe for an HTML page (`receipt report`). A receipt is untrusted: a job
// chose its output names, its stdout and stderr, and a forged receipt can hold anything. So every
// string goes through display::escape first (control characters, bytes that are not UTF-8 and the
// bidirectional overrides become visible `\xNN` / `\uNNNN`, exactly as in the terminal), then the
// five characters HTML gives meaning to become entities. The result is inert in element content
// and in quoted attribute values alike; nothing of a receipt is ever put anywhere else (no URL, no
// style, no script).
#pragma once

#include <string>
#include <string_view>

namespace sealrun::html {

// `bytes` for a page: escaped as above, one line.
std::string text(std::string_view bytes);
// The same, cut to about `max_bytes` of the terminal form ("…" appended when cut).
std::string text_cut(std::string_view bytes, size_t max_bytes);
// Multi-line text (a log tail): each line as text(), joined by "\n" (for a <pre>).
std::string lines(std::string_view bytes);
// Only the HTML entities, for text that is ours (labels, numbers): & < > " '.
std::string entities(std::string_view ours);

}  // namespace sealrun::html
