// SPDX-License-Identifier: Apache-2.0
// Canonical JSON spelling for semantic-tree-v1 records: see tree_json.h.
#include "fingerprint/tree_json.h"

#include <array>
#include <charconv>

namespace sealrun::tree_json {
namespace {

constexpr char kB64Alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int b64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

bool is_valid_utf8(std::string_view bytes) {
  size_t i = 0;
  const size_t n = bytes.size();
  while (i < n) {
    const auto b0 = static_cast<uint8_t>(bytes[i]);
    if (b0 < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp;
    uint32_t min;
    if ((b0 & 0xe0) == 0xc0) {
      len = 2, cp = b0 & 0x1f, min = 0x80;
    } else if ((b0 & 0xf0) == 0xe0) {
      len = 3, cp = b0 & 0x0f, min = 0x800;
    } else if ((b0 & 0xf8) == 0xf0) {
      len = 4, cp = b0 & 0x07, min = 0x10000;
    } else {
      return false;  // a continuation byte or 0xf8..0xff where a sequence must start
    }
    if (i + len > n) return false;
    for (size_t k = 1; k < len; ++k) {
      const auto b = static_cast<uint8_t>(bytes[i + k]);
      if ((b & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (b & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += len;
  }
  return true;
}

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = (static_cast<uint8_t>(bytes[i]) << 16) |
                       (static_cast<uint8_t>(bytes[i + 1]) << 8) |
                       static_cast<uint8_t>(bytes[i + 2]);
    out += kB64Alphabet[(v >> 18) & 63];
    out += kB64Alphabet[(v >> 12) & 63];
    out += kB64Alphabet[(v >> 6) & 63];
    out += kB64Alphabet[v & 63];
  }
  const size_t rest = bytes.size() - i;
  if (rest == 1) {
    const uint32_t v = static_cast<uint8_t>(bytes[i]) << 16;
    out += kB64Alphabet[(v >> 18) & 63];
    out += kB64Alphabet[(v >> 12) & 63];
    out += "==";
  } else if (rest == 2) {
    const uint32_t v =
        (static_cast<uint8_t>(bytes[i]) << 16) | (static_cast<uint8_t>(bytes[i + 1]) << 8);
    out += kB64Alphabet[(v >> 18) & 63];
    out += kB64Alphabet[(v >> 12) & 63];
    out += kB64Alphabet[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    std::array<int, 4> v{};
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = text[i + k];
      if (c == '=' && last && k >= 2) {
        v[k] = 0;
        ++pad;
        continue;
      }
      if (pad > 0) return std::nullopt;  // data after padding
      v[k] = b64_value(c);
      if (v[k] < 0) return std::nullopt;
    }
    const uint32_t word = (v[0] << 18) | (v[1] << 12) | (v[2] << 6) | v[3];
    out += static_cast<char>((word >> 16) & 0xff);
    if (pad < 2) out += static_cast<char>((word >> 8) & 0xff);
    if (pad < 1) out += static_cast<char>(word & 0xff);
    // Canonical form only: the bits dropped by padding must be zero, so each byte string has
    // exactly one accepted spelling.
    if ((pad == 1 && (v[2] & 0x3) != 0) || (pad == 2 && (v[1] & 0xf) != 0)) return std::nullopt;
  }
  return out;
}

void append_string(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  // Bytes that need no escape are appended a run at a time (an inventory writes tens of thousands
  // of paths, nearly all of them plain).
  size_t run = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const auto b = static_cast<uint8_t>(c);
    if (c != '"' && c != '\\' && b >= 0x20) continue;
    out.append(text.data() + run, i - run);
    run = i + 1;
    if (b >= 0x20) {
      out += '\\';
      out += c;
    } else {
      // One spelling for every control byte (no \n or \t short forms), so there is nothing to
      // choose between.
      out += "\\u00";
      out += kHex[b >> 4];
      out += kHex[b & 0xf];
    }
  }
  out.append(text.data() + run, text.size() - run);
  out += '"';
}

void append_bytes_field(std::string& out, std::string_view key, std::string_view raw) {
  out += '"';
  out += key;
  if (is_valid_utf8(raw)) {
    out += "\":";
    append_string(out, raw);
  } else {
    out += "_b64\":\"";
    out += base64_encode(raw);
    out += '"';
  }
}

void append_uint_field(std::string& out, std::string_view key, uint64_t value) {
  out += '"';
  out += key;
  out += "\":";
  char digits[20];  // the most a uint64_t takes in decimal
  const auto end = std::to_chars(digits, digits + sizeof(digits), value).ptr;
  out.append(digits, static_cast<size_t>(end - digits));
}

}  // namespace sealrun::tree_json
