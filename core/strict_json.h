// SPDX-License-Identifier: Apache-2.0
// Strict, bounded JSON reading for documents someone else wrote (admissions, drafts, receipts,
// grant records, image metadata): the one
// place where hostile JSON is turned into a value. nlohmann's DOM parser silently keeps the last
// of two duplicate keys and recurses as deep as the input nests; a SAX handler lets us refuse both
// while the bytes stream past, so a 100,000-level document stops at level 33 and costs nothing.
// Every refusal names where it happened as a JSON path ("limits.pids_max", "command.argv[2]").
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/result.h"

namespace sealrun {

inline constexpr size_t kMaxJsonDepth = 32;
inline constexpr size_t kMaxStringBytes = 64 * 1024;

// Parses `bytes` as exactly one JSON document (RFC 8259, no comments, nothing after it) and
// refuses: nesting deeper than max_depth, a key repeated within one object, a string or key that
// contains NUL or is longer than kMaxStringBytes, and (nlohmann's lexer) invalid UTF-8, raw
// control characters, truncation. Objects come back with keys sorted (nlohmann's std::map).
Result<nlohmann::json> parse_strict_json(std::string_view bytes, size_t max_depth = kMaxJsonDepth,
                                         size_t max_string_bytes = kMaxStringBytes);

// "a.b[3].c": the spelling of a position in a document used by every admission message.
std::string json_path_join(const std::string& parent, const std::string& key);
std::string json_path_index(const std::string& parent, size_t index);

// Text from a hostile document made safe to show a person: control bytes (ESC sequences, CR,
// newlines) become \xNN, and anything past max_bytes is cut at a UTF-8 character boundary and
// marked. Every message that quotes the document goes through this.
std::string printable_text(std::string_view text, size_t max_bytes = 400);

}  // namespace sealrun
