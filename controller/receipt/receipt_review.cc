// SPDX-License-Identifier: Apache-2.0
// Receipt review: see receipt_review.h. A receipt under review is untrusted input, and much of it
// came from a job (output names, link targets, log tails): every string that reaches a person
// goes through display_text.h, so a name with a newline cannot fake a line and an escape
// sequence cannot reach the terminal.
#include "controller/receipt/receipt_review.h"

#include <fmt/format.h>

#include "controller/common/display_text.h"
#include "controller/receipt/receipt_facts.h"
#include "controller/receipt/receipt_fields.h"
#include "fingerprint/tree_json.h"

namespace sealrun::receipt {

using nlohmann::json;

namespace {

constexpr size_t kTailLinesShown = 20;
constexpr size_t kOutputsShown = 50;

// The raw value of a string member, or the JSON of any other value; "" when absent.
std::string raw(const json& doc, const char* key) {
  if (!doc.is_object() || !doc.contains(key)) return "";
  return doc[key].is_string() ? doc[key].get<std::string>()
                              : doc[key].dump(-1, ' ', false, json::error_handler_t::replace);
}

// A member for a person: escaped, one line.
std::string str(const json& doc, const char* key) { return display::escape(raw(doc, key)); }

// A byte count for a person, in binary units (receipt_facts.h).
std::string size(const json& doc, const char* key) {
  return doc.is_object() && doc.contains(key) ? bytes_text(doc[key]) : "";
}

// A limit's value: in binary units when the limit is a number of bytes (its name ends _bytes).
std::string limit(const json& l, const char* key) {
  std::string name = raw(l, "name");
  bool is_bytes = name.size() > 6 && name.compare(name.size() - 6, 6, "_bytes") == 0;
  return is_bytes ? size(l, key) : str(l, key);
}

// A name recorded under `key` (docs/receipt.md): the raw bytes from `<key>_b64` when present, else
// the string itself; shown escaped, so a name always looks the same and two names never alike.
std::string shown_name(const json& o, const std::string& key) {
  std::string b64 = raw(o, (key + "_b64").c_str());
  if (!b64.empty())
    if (auto bytes = tree_json::base64_decode(b64)) return display::escape(*bytes);
  return str(o, key.c_str());
}

json list(const json& doc, const char* key) {
  return doc.is_object() && doc.contains(key) && doc[key].is_array() ? doc[key] : json::array();
}

bool command_failed(const json& c) {
  return !(c.contains("exit") && c["exit"] == 0) || c.value("signal", 0) != 0 ||
         c.value("timed_out", false);
}

// The last `n` lines of `text`.
std::string last_lines(const std::string& text, size_t n) {
  size_t end = text.size();
  if (end > 0 && text[end - 1] == '\n') --end;
  size_t start = end;
  for (size_t lines = 0; start > 0; --start)
    if (text[start - 1] == '\n' && ++lines == n) break;
  return text.substr(start);
}

// The end of a failed command's stderr (or stdout, when stderr is empty), line by line.
std::string failed_tail(const json& c) {
  for (const char* stream : {"stderr", "stdout"}) {
    if (!c.contains(stream) || !c[stream].is_object()) continue;
    std::string tail = raw(c[stream], "tail");
    if (tail.empty()) continue;
    return fmt::format("  the end of {}'s {} ({} bytes in all):\n{}", str(c, "label"), stream,
                       str(c[stream], "size"),
                       display::indent_lines(last_lines(tail, kTailLinesShown), "    | "));
  }
  return "";
}

std::string what_failed(const json& r) {
  std::string out;
  for (const auto& v : list(r, "verifications"))
    if (raw(v, "result") != "pass")
      out += fmt::format("  verification FAILED {}: expected {}, observed {}\n", str(v, "target"),
                         str(v, "expected"), str(v, "observed"));
  if (r.contains("guard") && r["guard"].is_object())
    out += fmt::format("  growth guard tripped: {} observed {} limit {}\n", str(r["guard"], "name"),
                       str(r["guard"], "observed"), str(r["guard"], "limit"));
  for (const auto& n : list(r, "not_finished"))
    out += fmt::format("  not finished: {}\n",
                       display::escape(n.is_string() ? n.get<std::string>() : n.dump()));
  for (const auto& c : list(r, "commands"))
    if (command_failed(c))
      out += fmt::format("  command {}: exit {} signal {}{}\n", str(c, "label"), str(c, "exit"),
                         str(c, "signal"), c.value("timed_out", false) ? " (timed out)" : "");
  if (r.contains("stop_confirmed") && r["stop_confirmed"] == false)
    out += "  the job's stop was NOT confirmed\n";
  for (const auto& c : list(r, "cleanup"))
    if (raw(c, "result") != "ok")
      out += fmt::format("  cleanup FAILED {}: {}\n", str(c, "action"), str(c, "detail"));
  for (const auto& c : list(r, "commands"))
    if (command_failed(c)) out += failed_tail(c);
  return out;
}

std::string output_line(const json& o) {
  std::string name = shown_name(o, "path");
  std::string kind = raw(o, "kind");
  if (kind == "symlink")
    return fmt::format("    {} -> {} (symlink)\n", name, shown_name(o, "target"));
  if (!kind.empty())
    return fmt::format("    {} ({}{})\n", name, display::escape(kind),
                       o.contains("device") ? " " + str(o, "device") : "");
  std::string link = o.contains("hardlink_of") || o.contains("hardlink_of_b64")
                         ? " (hard link of " + shown_name(o, "hardlink_of") + ")"
                         : "";
  return fmt::format("    {}  {}  sha256:{}{}\n", name, size(o, "size"), str(o, "sha256"), link);
}

// The outputs for a person: regular files first, then the other kinds, at most kOutputsShown;
// the receipt (and outputs.jsonl) hold the rest.
std::string outputs_text(const json& r, size_t max_shown) {
  auto outputs = list(r, "outputs");
  std::string out = fmt::format("  outputs: {} ({}), list sha256:{}\n", str(r, "outputs_total"),
                                size(r, "outputs_bytes"), str(r, "outputs_list_sha256"));
  size_t shown = 0;
  for (bool files : {true, false})
    for (const auto& o : outputs)
      if (o.is_object() && o.contains("kind") != files && shown < max_shown) {
        out += output_line(o);
        ++shown;
      }
  if (shown < outputs.size())
    out += fmt::format("    ... {} more in the receipt (outputs.jsonl lists them all)\n",
                       outputs.size() - shown);
  return out;
}

std::string details(const json& r, size_t outputs_shown) {
  std::string out = "details:\n";
  out += fmt::format("  admission {}\n  {} → {}\n", str(r, "admission_sha256"), str(r, "started"),
                     str(r, "finished"));
  auto verifications = list(r, "verifications");
  size_t pass = 0;
  for (const auto& v : verifications) pass += raw(v, "result") == "pass";
  out += fmt::format("  verifications: {} of {} listed passed\n", pass, verifications.size());
  if (r.contains("grant") && r["grant"].is_object()) {
    const auto& g = r["grant"];
    out += fmt::format("  containment: {} ({}), enforced: {}\n", str(g, "mechanism"),
                       str(g, "mode"), str(g, "enforced"));
    if (!list(g, "unenforced_required").empty())
      out += fmt::format("    NOT enforced though required: {}\n", str(g, "unenforced_required"));
  }
  if (r.contains("memory") && r["memory"].is_object()) {
    const auto& m = r["memory"];
    out += fmt::format("  memory ({}): peak {}, events {}\n", str(m, "backend"),
                       size(m, "peak_bytes"), str(m, "events"));
    for (const auto& l : list(m, "limits"))
      out += fmt::format("    {} requested {} observed {} {}{}\n", str(l, "name"),
                         limit(l, "requested"), limit(l, "observed"),
                         l.value("applied", false) ? "applied" : "NOT applied",
                         raw(l, "note").empty() ? "" : " (" + str(l, "note") + ")");
  }
  for (const auto& c : list(r, "commands"))
    out += fmt::format("  command {}: exit {} signal {}{}\n", str(c, "label"), str(c, "exit"),
                       str(c, "signal"), c.value("timed_out", false) ? " (timed out)" : "");
  out += outputs_text(r, outputs_shown);
  out += fmt::format("  stop confirmed: {}\n", str(r, "stop_confirmed"));
  auto cleanup = list(r, "cleanup");
  out += fmt::format("  cleanup: {} actions\n", cleanup.size());
  for (const auto& c : cleanup)
    out += fmt::format("    {}: {}{}\n", str(c, "action"), str(c, "result"),
                       raw(c, "detail").empty() ? "" : " — " + str(c, "detail"));
  for (const auto& n : list(r, "notes"))
    out += fmt::format("  note: {}\n", display::escape(n.is_string() ? n.get<std::string>() : ""));
  for (const auto& t : list(r, "truncated"))
    out += fmt::format("  shortened to stay bounded: {}\n",
                       display::escape(t.is_string() ? t.get<std::string>() : ""));
  return out;
}

}  // namespace

std::string summary_text(const json& r, bool all_outputs) {
  std::string out = fmt::format("receipt {}: {} (exit {})\n  {}\n", str(r, "id"), str(r, "state"),
                                str(r, "exit"), str(r, "reason"));
  if (raw(r, "state") != "built") {
    std::string failed = what_failed(r);
    if (!failed.empty()) out += "what failed:\n" + failed;
  }
  return out + details(r, all_outputs ? SIZE_MAX : kOutputsShown);
}

json to_in_toto(const json& r) {
  // Subjects are the regular files (what has a digest); a name that is not UTF-8 is the escaped
  // display form, with the raw bytes beside it in an annotation (the receipt's own rule).
  json subjects = json::array();
  for (const auto& o : list(r, "outputs")) {
    if (o.contains("kind")) continue;
    json subject = {{"name", raw(o, "path")}, {"digest", {{"sha256", raw(o, "sha256")}}}};
    if (o.contains("path_b64")) subject["annotations"] = {{"path_b64", raw(o, "path_b64")}};
    subjects.push_back(std::move(subject));
  }
  json deps = json::array();
  for (const auto& v : list(r, "verifications"))
    deps.push_back(
        {{"name", raw(v, "target")},
         {"annotations", {{"expected", raw(v, "expected")}, {"result", raw(v, "result")}}}});
  json byproducts = json::array();
  for (const auto& c : list(r, "commands"))
    for (const char* stream : {"stdout", "stderr"})
      if (c.contains(stream) && c[stream].is_object())
        byproducts.push_back({{"name", fmt::format("{}.{}", raw(c, "label"), stream)},
                              {"digest", {{"sha256", raw(c[stream], "sha256")}}}});
  return {
      {"_type", "https://in-toto.io/Statement/v1"},
      {"subject", subjects},
      {"predicateType", "https://slsa.dev/provenance/v1"},
      {"predicate",
       {{"buildDefinition",
         {{"buildType", "https://github.com/sealrun/sealrun/run/v1"},
          {"externalParameters", {{"admission_sha256", raw(r, "admission_sha256")}}},
          {"internalParameters",
           {{"grant", r.value("grant", json())},
            {"memory", r.value("memory", json())},
            {"outputs",
             {{"total", r.value("outputs_total", json())},
              {"listed", list(r, "outputs").size()},
              {"list_sha256", r.value("outputs_list_sha256", json())}}}}},
          {"resolvedDependencies", deps}}},
        {"runDetails",
         {{"builder", {{"id", "sealrun"}}},
          {"metadata",
           {{"invocationId", raw(r, "id")},
            {"startedOn", raw(r, "started")},
            {"finishedOn", raw(r, "finished")}}},
          {"byproducts", byproducts}}}}},
  };
}

}  // namespace sealrun::receipt
