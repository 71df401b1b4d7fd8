// SPDX-License-Identifier: Apache-2.0
// Lower-case hexadecimal, the one spelling of digests everywhere in sealrun (and in OCI, git).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sealrun {

std::string to_hex(const uint8_t* data, size_t size);
inline std::string to_hex(std::string_view bytes) {
  return to_hex(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}
// True for exactly 64 lower-case hex digits (a SHA-256 as sealrun writes it).
bool is_sha256_hex(std::string_view s);
// Decodes hex (either case); nullopt on an odd length or a non-hex digit.
std::optional<std::string> from_hex(std::string_view hex);

}  // namespace sealrun
