// SPDX-License-Identifier: Apache-2.0
// Escaping for HTML: see html_text.h.
#include "controller/receipt/html_text.h"

#include "controller/common/display_text.h"

namespace sealrun::html {

std::string entities(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string text(std::string_view bytes) { return entities(display::escape(bytes)); }

std::string text_cut(std::string_view bytes, size_t max_bytes) {
  return entities(display::escape_cut(bytes, max_bytes));
}

std::string lines(std::string_view bytes) {
  std::string out;
  while (!bytes.empty()) {
    size_t nl = bytes.find('\n');
    if (!out.empty()) out += '\n';
    out += text(bytes.substr(0, nl));
    if (nl == std::string_view::npos) break;
    bytes.remove_prefix(nl + 1);
  }
  return out;
}

}  // namespace sealrun::html
