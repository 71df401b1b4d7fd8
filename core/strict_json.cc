// SPDX-License-Identifier: Apache-2.0
// parse_strict_json(): see strict_json.h. The SAX handler below builds the DOM itself so that it
// sees every key before it is stored (duplicates) and every container as it opens (depth).
#include "core/strict_json.h"

#include <fmt/format.h>

#include <utility>
#include <vector>

namespace sealrun {

using nlohmann::json;

std::string json_path_join(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

std::string json_path_index(const std::string& parent, size_t index) {
  return fmt::format("{}[{}]", parent, index);
}

std::string printable_text(std::string_view text, size_t max_bytes) {
  size_t keep = text.size();
  if (keep > max_bytes) {
    keep = max_bytes;
    // Back up over UTF-8 continuation bytes (10xxxxxx) so no character is cut in half.
    while (keep > 0 && (static_cast<unsigned char>(text[keep]) & 0xC0) == 0x80) --keep;
  }
  std::string out;
  out.reserve(keep + 16);
  for (size_t i = 0; i < keep; ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f)
      out += fmt::format("\\x{:02x}", c);
    else
      out += static_cast<char>(c);
  }
  if (keep < text.size()) out += fmt::format("... ({} bytes more)", text.size() - keep);
  return out;
}

namespace {

// nlohmann's messages look like "[json.exception.parse_error.101] parse error at line 1, column 9:
// syntax error while parsing value - invalid literal; last read: '<bytes>'". The "last read" part
// echoes raw input (possibly invalid UTF-8 or control bytes), so it is cut off before we print it.
std::string clean_parser_message(std::string what) {
  if (auto pos = what.find("] "); what.rfind("[json.exception", 0) == 0 && pos != std::string::npos)
    what.erase(0, pos + 2);
  if (auto pos = what.find("; last read"); pos != std::string::npos) what.erase(pos);
  return what;
}

class StrictSax {
 public:
  StrictSax(size_t max_depth, size_t input_bytes, size_t max_string_bytes)
      : max_depth_(max_depth), input_bytes_(input_bytes), max_string_bytes_(max_string_bytes) {}

  bool null() { return put(json(nullptr)); }
  bool boolean(bool v) { return put(json(v)); }
  bool number_integer(json::number_integer_t v) { return put(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return put(json(v)); }
  bool number_float(json::number_float_t v, const json::string_t& /*text*/) { return put(json(v)); }
  bool string(json::string_t& s) {
    if (!check_text(s, "string")) return false;
    return put(json(std::move(s)));
  }
  bool binary(json::binary_t& /*unused*/) { return fail(path() + ": binary values are not JSON"); }
  bool start_object(std::size_t /*elements*/) { return open(json::object()); }
  bool key(json::string_t& k) {
    if (!check_text(k, "key")) return false;
    Frame& top = stack_.back();
    if (top.value.contains(k))
      return fail(fmt::format("{}: duplicate key \"{}\" (each key may appear once per object)",
                              json_path_join(path_of_parent(), k), printable_text(k, 80)));
    top.key = std::move(k);
    top.has_key = true;
    return true;
  }
  bool end_object() { return close(); }
  bool start_array(std::size_t /*elements*/) { return open(json::array()); }
  bool end_array() { return close(); }

  bool parse_error(std::size_t position, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& ex) {
    if (!error_.empty()) return false;  // our own refusal came first; keep it
    std::string what = clean_parser_message(ex.what());
    std::string where = path().empty() ? std::string("document") : path();
    if (what.find("ill-formed UTF-8") != std::string::npos)
      return fail(fmt::format("{}: invalid UTF-8 in a string near byte {}", where, position));
    // Input that stops inside a string or a literal is reported by the lexer as a bad token;
    // any error at the very end of the bytes is, for a person, a truncated document.
    if (what.find("unexpected end of input") != std::string::npos || position >= input_bytes_)
      return fail(fmt::format("truncated document: unexpected end of input at byte {} (inside {})",
                              position, where));
    return fail(fmt::format("{}: malformed JSON near byte {}: {}", where, position, what));
  }

  bool done() const { return done_; }
  const std::string& error() const { return error_; }
  json take() { return std::move(result_); }

 private:
  struct Frame {
    json value;
    std::string key;  // objects: the key whose value comes next
    bool has_key = false;
  };

  bool fail(const std::string& message) {
    if (error_.empty()) error_ = printable_text(message, 1024);
    return false;
  }

  bool check_text(const std::string& s, const char* what) {
    if (s.size() > max_string_bytes_)
      return fail(fmt::format("{}: {} is {} bytes, over the limit of {}", path(), what, s.size(),
                              max_string_bytes_));
    if (s.find('\0') != std::string::npos)
      return fail(fmt::format("{}: {} contains a NUL character", path(), what));
    return true;
  }

  bool open(json container) {
    if (stack_.size() >= max_depth_)
      return fail(fmt::format("document: nested deeper than {} levels (at {})", max_depth_,
                              printable_text(path(), 60)));
    stack_.push_back(Frame{std::move(container), {}});
    return true;
  }

  bool close() {
    json value = std::move(stack_.back().value);
    stack_.pop_back();
    return put(std::move(value));
  }

  bool put(json value) {
    if (stack_.empty()) {
      result_ = std::move(value);
      done_ = true;
      return true;
    }
    Frame& top = stack_.back();
    if (top.value.is_array())
      top.value.push_back(std::move(value));
    else
      top.value[top.key] = std::move(value);
    return true;
  }

  // The path of the value being read now: every open container plus its pending key or index.
  std::string path() const {
    std::string p;
    for (const Frame& f : stack_) {
      if (f.value.is_array())
        p = json_path_index(p, f.value.size());
      else if (f.has_key)
        p = json_path_join(p, f.key);
      else
        break;
    }
    return p;
  }
  // The path of the innermost open object itself (for a key that was just read).
  std::string path_of_parent() const {
    std::string p;
    for (size_t i = 0; i + 1 < stack_.size(); ++i) {
      const Frame& f = stack_[i];
      p = f.value.is_array() ? json_path_index(p, f.value.size()) : json_path_join(p, f.key);
    }
    return p;
  }

  size_t max_depth_;
  size_t input_bytes_;
  size_t max_string_bytes_;
  std::vector<Frame> stack_;
  json result_;
  bool done_ = false;
  std::string error_;
};

}  // namespace

Result<json> parse_strict_json(std::string_view bytes, size_t max_depth, size_t max_string_bytes) {
  StrictSax sax(max_depth, bytes.size(), max_string_bytes);
  bool ok = false;
  try {
    ok = json::sax_parse(bytes, &sax, json::input_format_t::json, /*strict=*/true,
                         /*ignore_comments=*/false);
  } catch (const std::exception& e) {
    // The handler never throws; this catches allocation failure and nlohmann internals.
    return Error::make(fmt::format("malformed JSON: {}", clean_parser_message(e.what())));
  }
  if (!ok || !sax.done()) {
    if (!sax.error().empty()) return Error::make(sax.error());
    return Error::make("malformed JSON: the document ended early");
  }
  return sax.take();
}

}  // namespace sealrun
