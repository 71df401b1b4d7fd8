// SPDX-License-Identifier: Apache-2.0
// Base64 (RFC 4648) for DSSE envelopes. Encoding is always the standard alphabet with padding;
// decoding accepts what the DSSE protocol says a verifier MUST accept — the standard or the
// URL-safe alphabet (one of them, not a mix), padded or not — and nothing else: no whitespace,
// no line breaks, no stray '=', no non-zero bits left over in the last character (so one byte
// string has exactly one accepted spelling per alphabet).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/result.h"

namespace sealrun::attest {

std::string base64_encode(std::string_view bytes);

// Decodes `text`, refusing anything above or a result longer than max_bytes (checked from the
// length before decoding, so an oversized field costs nothing). `what` names the field in errors.
Result<std::string> base64_decode(std::string_view text, size_t max_bytes, std::string_view what);

}  // namespace sealrun::attest
