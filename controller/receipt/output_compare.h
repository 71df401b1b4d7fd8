// SPDX-License-Identifier: Apache-2.0
// Comparing two runs' outputs by path, the one comparison `sealrun rebuild` and `sealrun receipt
// diff` share (so they agree): the complete output list of a receipt (results/<id>/outputs.jsonl
// beside it, trusted only when its SHA-256 is the receipt's outputs_list_sha256), and the outputs
// added, removed and changed between two such lists. Pure apart from reading the list.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace sealrun::receipt {

// The complete output list of the receipt `doc` read from `receipt_path`: the lines of
// outputs.jsonl beside it, after checking their SHA-256 against outputs_list_sha256. An error
// names the file and why (no list recorded, missing, altered). With `listing_if_complete`, a
// receipt that lists every output itself (outputs_total == the listing's length) needs no file,
// and one that recorded no list and lists nothing has no outputs.
Result<std::vector<nlohmann::json>> load_output_list(const std::string& receipt_path,
                                                     const nlohmann::json& doc,
                                                     bool listing_if_complete = false);

// NOLINTNEXTLINE(bugprone-exception-escape): json members' implicit special functions.
struct OutputChange {
  enum class Kind { kAdded, kRemoved, kChanged };
  Kind kind = Kind::kChanged;
  std::string name;     // raw bytes of the path (from path_b64 when the name is not UTF-8)
  nlohmann::json a, b;  // the records on each side; null where absent
};
std::string_view change_kind_name(OutputChange::Kind kind);

// A member of an untrusted record as text: the string itself, any other value as JSON, "" when
// absent (never throws on a wrong type, as nlohmann's value() would).
std::string member_text(const nlohmann::json& record,
                        const char* key);  // "added", "removed", "changed"

// Outputs matched by raw path: removed (only in a), added (only in b), changed (records differ:
// digest, size, kind, link target, hard-link structure). In path order.
std::vector<OutputChange> compare_outputs(const std::vector<nlohmann::json>& a,
                                          const std::vector<nlohmann::json>& b);

// For a person: "changed: bin/x (sha256 1f2e…, 120 bytes → 9a0b…, 124 bytes)"; names escaped.
std::string change_text(const OutputChange& change);
// For scripts: {change, path[, path_b64], a, b}.
nlohmann::json change_json(const OutputChange& change);

}  // namespace sealrun::receipt
