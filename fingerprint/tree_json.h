// SPDX-License-Identifier: Apache-2.0
// Canonical JSON text for semantic-tree-v1 records (docs/semantic-tree-v1.md). The inventory's
// digest is the SHA-256 of its bytes, so the same record must always be spelled the same way: this
// writer fixes the key order, emits no whitespace, escapes exactly `"`, `\` and control bytes, and
// carries names that are not valid UTF-8 losslessly as base64 under a `_b64` key. Pure code.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sealrun::tree_json {

// Strict UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing above U+10FFFF.
bool is_valid_utf8(std::string_view bytes);

// RFC 4648 base64 with padding; decode returns nullopt for anything that is not canonical base64.
std::string base64_encode(std::string_view bytes);
std::optional<std::string> base64_decode(std::string_view text);

// Appends a JSON string literal of valid UTF-8 `text` (quotes included).
void append_string(std::string& out, std::string_view text);

// Appends `"key":"<raw>"` when `raw` is valid UTF-8, else `"key_b64":"<base64 of raw>"`; the
// caller supplies the separating comma.
void append_bytes_field(std::string& out, std::string_view key, std::string_view raw);

// Appends `"key":<decimal>`.
void append_uint_field(std::string& out, std::string_view key, uint64_t value);

}  // namespace sealrun::tree_json
