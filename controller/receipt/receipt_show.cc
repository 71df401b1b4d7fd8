// SPDX-License-Identifier: Apache-2.0
// `receipt show`: see receipt_show.h.
#include "controller/receipt/receipt_show.h"

#include <fmt/format.h>

#include <map>

#include "controller/common/display_text.h"
#include "controller/receipt/receipt_facts.h"
#include "controller/receipt/receipt_review.h"

namespace sealrun::receipt {

using nlohmann::json;

namespace {

constexpr size_t kShortList = 10;   // environment variables and inputs shown without --verbose
constexpr size_t kShortText = 512;  // bytes of one value shown without --verbose

const json& object_member(const json& doc, const char* key) {
  static const json kNull;
  return doc.is_object() && doc.contains(key) && doc[key].is_object() ? doc[key] : kNull;
}

// A member for a person: escaped, one line, cut unless verbose.
std::string shown(const json& doc, const char* key, bool verbose) {
  std::string raw = member_text(doc, key);
  return verbose ? display::escape(raw) : display::escape_cut(raw, kShortText);
}

std::string version_text(const json& r) {
  const json& v = object_member(r, "sealrun_version");
  if (v.is_null()) return "  written by: an earlier sealrun (no sealrun_version)\n";
  return fmt::format("  written by: sealrun {} (commit {}{})\n", shown(v, "version", true),
                     shown(v, "commit", true),
                     v.contains("dirty") && v["dirty"] == true ? ", dirty tree" : "");
}

std::string rebuild_text(const json& r) {
  const json& rb = object_member(r, "rebuild_of");
  if (rb.is_null()) return "  rebuild of: none (an ordinary run)\n";
  std::string vary;
  for (const auto& v : member_list(rb, "variations"))
    vary += (vary.empty() ? "" : ", ") + shown(v, "name", false);
  return fmt::format("  rebuild of: run {} (receipt sha256:{}){}\n", shown(rb, "id", true),
                     shown(rb, "receipt_sha256", true), vary.empty() ? "" : ", varied: " + vary);
}

std::string command_text(const json& a, bool verbose) {
  const json& c = object_member(a, "command");
  if (c.is_null()) return "  command: none recorded (no admission was read)\n";
  std::string argv = display::json_for_terminal(json_text(member_list(c, "argv")));
  if (!verbose && argv.size() > kShortText) argv = display::escape_cut(argv, kShortText);
  std::string out = fmt::format("  command: {}\n    in {}, SOURCE_DATE_EPOCH {}\n", argv,
                                shown(c, "cwd", verbose), shown(a, "source_date_epoch", true));
  const json& env = object_member(a, "env");
  if (env.is_null()) return out;
  out += fmt::format("  environment: {} variable(s), nothing else\n", env.size());
  size_t n = 0;
  for (auto it = env.begin(); it != env.end(); ++it, ++n) {
    if (!verbose && n == kShortList) {
      out += fmt::format("    ... {} more (--verbose lists them)\n", env.size() - n);
      break;
    }
    std::string value =
        it.value().is_string() ? it.value().get<std::string>() : json_text(it.value());
    out += fmt::format("    {}={}\n", display::escape(it.key()),
                       verbose ? display::escape(value) : display::escape_cut(value, kShortText));
  }
  return out;
}

std::string inputs_text(const json& a, bool verbose) {
  auto inputs = member_list(a, "inputs");
  std::map<std::string, size_t> kinds;
  std::string listed;
  size_t hidden = 0;
  for (const auto& in : inputs) {
    std::string kind = member_text(object_member(in, "annotations"), "kind");
    ++kinds[kind];
    // Without --verbose the closure's files (hundreds, each a host file) are counted only.
    if (!verbose && (kind == "closure" || listed.size() > kShortList * 200)) {
      ++hidden;
      continue;
    }
    listed += fmt::format("    {}  {}  {}\n", shown(in, "name", verbose),
                          display::escape(input_digest(in)), shown(in, "uri", verbose));
  }
  std::string counts;
  for (const auto& [kind, n] : kinds)
    counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n,
                          kind.empty() ? "other" : display::escape(kind));
  std::string out =
      fmt::format("  inputs: {}{}\n", inputs.size(), counts.empty() ? "" : " (" + counts + ")");
  out += listed;
  if (hidden > 0) out += fmt::format("    ... {} more (--verbose lists them)\n", hidden);
  return out;
}

std::string view_text(const json& r, bool verbose) {
  auto view = member_list(r, "view");
  if (view.empty()) return "  view: not recorded (no job was started)\n";
  std::string kinds, writable;
  for (const auto& [kind, n] : view_kinds(r))
    kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", n, display::escape(kind));
  for (const auto& v : view)
    if (v.is_object() && v.contains("writable") && v["writable"] == true)
      writable += (writable.empty() ? "" : ", ") + shown(v, "job_path", verbose);
  std::string out = fmt::format("  view: {} entries ({}); writable: {}\n", view.size(), kinds,
                                writable.empty() ? "nothing" : writable);
  if (verbose)
    for (const auto& v : view)
      out += fmt::format(
          "    {}  {}  pin {}  from {}{}\n", shown(v, "job_path", true), shown(v, "kind", true),
          shown(v, "pin", true), shown(v, "host_path", true),
          v.is_object() && v.contains("writable") && v["writable"] == true ? "  writable" : "");
  return out;
}

std::string limits_text(const json& r, const json& a, bool verbose) {
  auto hits = limits_hit(r);
  std::string out = hits.empty() ? "  limits reached: none\n" : "  limits reached:\n";
  for (const auto& h : hits)
    out += fmt::format("    {}{}\n", display::escape(h.name),
                       h.detail.empty() ? "" : ": " + display::escape(h.detail));
  const json& limits = object_member(a, "limits");
  if (verbose && !limits.is_null()) {
    out += "  admitted limits:\n";
    for (auto it = limits.begin(); it != limits.end(); ++it) {
      bool is_bytes =
          it.key().size() > 6 && it.key().compare(it.key().size() - 6, 6, "_bytes") == 0;
      out += fmt::format(
          "    {} {}\n", display::escape(it.key()),
          is_bytes ? bytes_text(it.value()) : display::json_for_terminal(json_text(it.value())));
    }
  }
  return out;
}

std::string samples_text(const json& r) {
  auto samples = member_list(r, "samples");
  std::string out = fmt::format("  census samples: {} listed, {} thinned out\n", samples.size(),
                                shown(r, "samples_dropped", true));
  for (const auto& s : samples) {
    if (!s.is_object()) continue;
    out += fmt::format(
        "    {:>8} ms  memory {}  owned {}  results {}  free {}\n", shown(s, "t_ms", true),
        s.contains("memory_bytes") ? bytes_text(s["memory_bytes"]) : "-",
        bytes_text(s.value("owned_bytes", json())), bytes_text(s.value("result_bytes", json())),
        bytes_text(s.value("free_bytes", json())));
  }
  return out;
}

std::string signature_text(const json& r, const ShowOptions& o) {
  const json& s = object_member(r, "signing");
  std::string out = s.is_null() ? "  signature: none (the receipt says it is unsigned)\n"
                                : fmt::format("  signature: by key {} ({})\n",
                                              shown(s, "key_id", true), shown(s, "envelope", true));
  if (!o.signature_result.empty())
    out += fmt::format("    {}: {}\n",
                       o.signature_result == "pass"   ? "verified"
                       : o.signature_result == "FAIL" ? "DOES NOT VERIFY"
                                                      : "not verified",
                       display::escape(o.signature_detail));
  return out;
}

}  // namespace

std::string show_text(const json& r, const ShowOptions& o) {
  std::string out = summary_text(r, o.verbose);
  const json& a = object_member(r, "admission");
  out += "run:\n";
  out += version_text(r);
  out += rebuild_text(r);
  out += command_text(a, o.verbose);
  out += inputs_text(a, o.verbose);
  out += view_text(r, o.verbose);
  out += limits_text(r, a, o.verbose);
  if (o.verbose) out += samples_text(r);
  out += signature_text(r, o);
  return out;
}

}  // namespace sealrun::receipt
