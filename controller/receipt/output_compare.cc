// SPDX-License-Identifier: Apache-2.0
// Output lists and their path-wise comparison: see output_compare.h.
#include "controller/receipt/output_compare.h"

#include <fcntl.h>
#include <fmt/format.h>

#include <map>

#include "attest/openssl_util.h"
#include "controller/common/display_text.h"
#include "core/bounded_file.h"
#include "core/strict_json.h"
#include "fingerprint/tree_json.h"

namespace sealrun::receipt {

using nlohmann::json;

namespace {

// outputs.jsonl is one short line per output; 256 MiB is over a million outputs, far past what a
// run may record (the result allowance stops it first), and bounds what a forged file costs us.
constexpr size_t kMaxListBytes = 256 * 1024 * 1024;

std::string dir_of(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

// An output's raw name: the bytes of path_b64 when the name is not UTF-8, else path.
std::string raw_name(const json& o) {
  if (o.contains("path_b64") && o["path_b64"].is_string())
    if (auto raw = tree_json::base64_decode(o["path_b64"].get<std::string>())) return *raw;
  return o.contains("path") && o["path"].is_string() ? o["path"].get<std::string>() : "";
}

std::string short_digest(const json& o) {
  std::string d = member_text(o, "sha256");
  return d.size() > 12 ? d.substr(0, 12) + "…" : d;
}

// One side of a change, for a person.
std::string side_text(const json& o) {
  std::string kind = o.contains("kind") ? member_text(o, "kind") : "file";
  if (kind == "file") {
    std::string s = fmt::format("sha256 {}, {} bytes", short_digest(o),
                                display::escape(member_text(o, "size")));
    if (o.contains("hardlink_of"))
      s += ", hard link of " + display::escape(member_text(o, "hardlink_of"));
    return s;
  }
  if (kind == "symlink") return "symlink to " + display::escape(member_text(o, "target"));
  return display::escape(kind);
}

}  // namespace

std::string member_text(const json& o, const char* key) {
  if (!o.is_object() || !o.contains(key)) return "";
  const json& v = o[key];
  return v.is_string() ? v.get<std::string>()
                       : v.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<std::vector<json>> load_output_list(const std::string& receipt_path, const json& doc,
                                           bool listing_if_complete) {
  const json listed = doc.is_object() && doc.contains("outputs") && doc["outputs"].is_array()
                          ? doc["outputs"]
                          : json::array();
  if (listing_if_complete) {
    const json total =
        doc.is_object() && doc.contains("outputs_total") ? doc["outputs_total"] : json(nullptr);
    // A run that recorded no list (refused, or stopped before collecting) has no outputs to
    // compare; one that listed them all needs no file.
    if ((total.is_null() && listed.empty()) ||
        (total.is_number_integer() && total.get<int64_t>() >= 0 &&
         total.get<uint64_t>() == listed.size()))
      return std::vector<json>(listed.begin(), listed.end());
  }
  if (!doc.is_object() || !doc.contains("outputs_list_sha256") ||
      !doc["outputs_list_sha256"].is_string())
    return Error::make(fmt::format(
        "{} records no output list (state {}): its run did not finish collecting outputs",
        receipt_path, display::escape(member_text(doc, "state"))));
  std::string list_path = dir_of(receipt_path) + "/outputs.jsonl";
  std::string bytes =
      SEALRUN_TRY_CTX(read_bounded_file(AT_FDCWD, list_path, kMaxListBytes),
                      fmt::format("the output list of {} (outputs.jsonl beside it)", receipt_path));
  std::string want = doc["outputs_list_sha256"].get<std::string>();
  std::string got = attest::sha256_hex_of(bytes);
  if (got != want)
    return Error::make(fmt::format(
        "{} has sha256 {}, but the receipt's outputs_list_sha256 is {}: the list was altered",
        list_path, got, want));
  std::vector<json> out;
  size_t start = 0;
  while (start < bytes.size()) {
    size_t end = bytes.find('\n', start);
    if (end == std::string::npos) end = bytes.size();
    auto line = parse_strict_json(std::string_view(bytes).substr(start, end - start), 8);
    if (!line || !line->is_object())
      return Error::make(
          fmt::format("{}: line {} is not an output record", list_path, out.size() + 1));
    out.push_back(std::move(*line));
    start = end + 1;
  }
  return out;
}

std::string_view change_kind_name(OutputChange::Kind kind) {
  switch (kind) {
    case OutputChange::Kind::kAdded:
      return "added";
    case OutputChange::Kind::kRemoved:
      return "removed";
    case OutputChange::Kind::kChanged:
      return "changed";
  }
  return "changed";
}

std::vector<OutputChange> compare_outputs(const std::vector<json>& a, const std::vector<json>& b) {
  std::map<std::string, const json*> in_a, in_b;
  for (const auto& o : a) in_a[raw_name(o)] = &o;
  for (const auto& o : b) in_b[raw_name(o)] = &o;
  std::vector<OutputChange> out;
  auto ia = in_a.begin();
  auto ib = in_b.begin();
  while (ia != in_a.end() || ib != in_b.end()) {
    if (ib == in_b.end() || (ia != in_a.end() && ia->first < ib->first)) {
      out.push_back({OutputChange::Kind::kRemoved, ia->first, *ia->second, nullptr});
      ++ia;
    } else if (ia == in_a.end() || ib->first < ia->first) {
      out.push_back({OutputChange::Kind::kAdded, ib->first, nullptr, *ib->second});
      ++ib;
    } else {
      // The records are compact canonical JSON of the same writer: equal means same output.
      if (*ia->second != *ib->second)
        out.push_back({OutputChange::Kind::kChanged, ia->first, *ia->second, *ib->second});
      ++ia;
      ++ib;
    }
  }
  return out;
}

std::string change_text(const OutputChange& c) {
  std::string name = display::escape(c.name);
  switch (c.kind) {
    case OutputChange::Kind::kAdded:
      return fmt::format("added: {} ({})", name, side_text(c.b));
    case OutputChange::Kind::kRemoved:
      return fmt::format("removed: {} ({})", name, side_text(c.a));
    case OutputChange::Kind::kChanged:
      return fmt::format("changed: {} ({} → {})", name, side_text(c.a), side_text(c.b));
  }
  return name;
}

json change_json(const OutputChange& c) {
  json j = {{"change", change_kind_name(c.kind)}, {"a", c.a}, {"b", c.b}};
  if (tree_json::is_valid_utf8(c.name)) {
    j["path"] = c.name;
  } else {
    j["path"] = display::escape(c.name);
    j["path_b64"] = tree_json::base64_encode(c.name);
  }
  return j;
}

}  // namespace sealrun::receipt
