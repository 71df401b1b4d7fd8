// SPDX-License-Identifier: Apache-2.0
// Escaping for terminals: see display_text.h.
#include "controller/common/display_text.h"

#include <fmt/format.h>

#include <cstdint>

namespace sealrun::display {

namespace {

// The length of the valid UTF-8 sequence at `s[i]` (RFC 3629: no overlong forms, no surrogates,
// nothing above U+10FFFF) and its code point, or 0 when the byte there does not start one.
size_t decode_utf8(std::string_view s, size_t i, uint32_t& cp) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  auto cont = [&](size_t k) { return i + k < s.size() && (b(k) & 0xC0) == 0x80; };
  unsigned char c = b(0);
  if (c < 0x80) {
    cp = c;
    return 1;
  }
  if (c >= 0xC2 && c <= 0xDF && cont(1)) {
    cp = ((c & 0x1Fu) << 6) | (b(1) & 0x3Fu);
    return 2;
  }
  if (c >= 0xE0 && c <= 0xEF && cont(1) && cont(2)) {
    cp = ((c & 0x0Fu) << 12) | ((b(1) & 0x3Fu) << 6) | (b(2) & 0x3Fu);
    if (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4 && cont(1) && cont(2) && cont(3)) {
    cp = ((c & 0x07u) << 18) | ((b(1) & 0x3Fu) << 12) | ((b(2) & 0x3Fu) << 6) | (b(3) & 0x3Fu);
    if (cp < 0x10000 || cp > 0x10FFFF) return 0;
    return 4;
  }
  return 0;
}

// Code points a terminal acts on or that reorder text: C1 controls (U+009B is a one-byte CSI on
// some terminals), the Arabic letter mark, the directional marks, line and paragraph separators,
// the embeddings and overrides of U+202A–E ("Trojan Source", CVE-2021-42574) and the isolates.
bool is_format_control(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) || cp == 0x061C || cp == 0x200E || cp == 0x200F ||
         (cp >= 0x2028 && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0xFEFF;
}

void append_escaped_char(std::string& out, std::string_view s, size_t& i) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  uint32_t cp = 0;
  size_t n = decode_utf8(s, i, cp);
  if (n == 0) {
    out += fmt::format("\\x{:02x}", c);
    ++i;
    return;
  }
  if (n == 1) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20 || c == 0x7F)
          out += fmt::format("\\x{:02x}", c);
        else
          out += static_cast<char>(c);
    }
  } else if (is_format_control(cp)) {
    out += fmt::format("\\u{:04x}", cp);
  } else {
    out.append(s.substr(i, n));
  }
  i += n;
}

}  // namespace

std::string escape(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) append_escaped_char(out, bytes, i);
  return out;
}

std::string escape_cut(std::string_view bytes, size_t max_bytes) {
  std::string out;
  for (size_t i = 0; i < bytes.size();) {
    size_t before = out.size();
    append_escaped_char(out, bytes, i);
    if (out.size() > max_bytes) {
      out.resize(before);
      return out + "…";
    }
  }
  return out;
}

std::string indent_lines(std::string_view text, std::string_view prefix) {
  std::string out;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    out.append(prefix);
    out += escape(line);
    out += '\n';
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return out;
}

std::string json_for_terminal(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = 0;
    size_t n = decode_utf8(text, i, cp);
    if (n == 0) {
      out += "\\ufffd";  // not from a JSON dump; never passed on raw
      ++i;
    } else if (cp == 0x7F || (cp < 0x20 && cp != '\n') || is_format_control(cp)) {
      out += fmt::format("\\u{:04x}", cp);
      i += n;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

}  // namespace sealrun::display
