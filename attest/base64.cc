// SPDX-License-Identifier: Apache-2.0
// base64_encode() and base64_decode(): see base64.h. Written out rather than taken from OpenSSL's
// EVP_DecodeBlock, which skips whitespace, accepts trailing garbage after padding and cannot
// report the decoded length exactly — all things a strict envelope reader must refuse.
#include "attest/base64.h"

#include <fmt/format.h>

#include <array>
#include <cstdint>

namespace sealrun::attest {
namespace {

constexpr char kStd[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

enum : int8_t { kBad = -1, kStdOnly = -2, kUrlOnly = -3 };

// For each byte: its 6-bit value, or kBad. '+' '/' belong to the standard alphabet only, '-' '_'
// to the URL-safe one; the table marks them so the decoder can refuse a mix.
struct Table {
  std::array<int8_t, 256> value{};
  constexpr Table() {
    for (auto& v : value) v = kBad;
    for (int i = 0; i < 64; ++i) value[static_cast<uint8_t>(kStd[i])] = static_cast<int8_t>(i);
  }
};
constexpr Table kTable;

int sextet(uint8_t c, bool* saw_std, bool* saw_url) {
  switch (c) {
    case '+':
      *saw_std = true;
      return 62;
    case '/':
      *saw_std = true;
      return 63;
    case '-':
      *saw_url = true;
      return 62;
    case '_':
      *saw_url = true;
      return 63;
    default:
      return kTable.value[c];
  }
}

}  // namespace

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  auto at = [&](size_t k) { return static_cast<uint32_t>(static_cast<uint8_t>(bytes[k])); };
  for (; i + 3 <= bytes.size(); i += 3) {
    uint32_t n = at(i) << 16 | at(i + 1) << 8 | at(i + 2);
    out += kStd[n >> 18];
    out += kStd[(n >> 12) & 63];
    out += kStd[(n >> 6) & 63];
    out += kStd[n & 63];
  }
  size_t rest = bytes.size() - i;
  if (rest == 1) {
    uint32_t n = at(i) << 16;
    out += kStd[n >> 18];
    out += kStd[(n >> 12) & 63];
    out += "==";
  } else if (rest == 2) {
    uint32_t n = at(i) << 16 | at(i + 1) << 8;
    out += kStd[n >> 18];
    out += kStd[(n >> 12) & 63];
    out += kStd[(n >> 6) & 63];
    out += '=';
  }
  return out;
}

Result<std::string> base64_decode(std::string_view text, size_t max_bytes, std::string_view what) {
  // Padding: at most two '=', only at the very end.
  size_t pad = 0;
  while (pad < 2 && pad < text.size() && text[text.size() - 1 - pad] == '=') ++pad;
  std::string_view body = text.substr(0, text.size() - pad);
  // Characters first, so the message points at the offending one.
  bool saw_std = false, saw_url = false;
  for (size_t i = 0; i < body.size(); ++i) {
    auto c = static_cast<uint8_t>(body[i]);
    if (sextet(c, &saw_std, &saw_url) >= 0) continue;
    return Error::make(fmt::format(
        "{}: bad base64: {} at offset {}", what,
        c == '=' ? std::string("'=' before the end")
                 : (c >= 0x21 && c < 0x7f ? fmt::format("character '{}'", static_cast<char>(c))
                                          : fmt::format("byte 0x{:02x}", c)),
        i));
  }
  if (saw_std && saw_url)
    return Error::make(
        fmt::format("{}: bad base64: mixes the standard (+/) and URL-safe (-_) alphabets", what));
  if (pad > 0 && text.size() % 4 != 0)
    return Error::make(
        fmt::format("{}: bad base64: padding does not complete a 4-character group", what));
  if (body.size() % 4 == 1)
    return Error::make(fmt::format("{}: bad base64: truncated ({} characters)", what, text.size()));
  size_t decoded = body.size() / 4 * 3 + (body.size() % 4 == 0 ? 0 : body.size() % 4 - 1);
  if (decoded > max_bytes)
    return Error::make(fmt::format("{}: decodes to {} bytes, over the limit of {} bytes", what,
                                   decoded, max_bytes));
  std::string out;
  out.reserve(decoded);
  uint32_t acc = 0;
  int bits = 0;
  for (char ch : body) {
    acc = acc << 6 | static_cast<uint32_t>(sextet(static_cast<uint8_t>(ch), &saw_std, &saw_url));
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  if (bits > 0 && (acc & ((1u << bits) - 1)) != 0)
    return Error::make(fmt::format("{}: bad base64: non-zero bits after the last byte", what));
  return out;
}

}  // namespace sealrun::attest
