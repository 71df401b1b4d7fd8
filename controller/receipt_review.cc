// Receipt review: see receipt_review.h.
#include "controller/receipt_review.h"

#include <fmt/format.h>

#include <map>
#include <set>

#include "controller/receipt_fields.h"

namespace sealrun::receipt {

using nlohmann::json;

namespace {

std::string str(const json& doc, const char* key) {
  if (!doc.is_object() || !doc.contains(key)) return "";
  return doc[key].is_string() ? doc[key].get<std::string>() : doc[key].dump();
}

bool is_timing(const std::string& key) { return is_timing_key(key); }

void flatten(const json& v, const std::string& path, bool with_timings,
             std::map<std::string, std::string>& out) {
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!with_timings && is_timing(it.key())) continue;
      flatten(it.value(), path.empty() ? it.key() : path + "." + it.key(), with_timings, out);
    }
  } else if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i)
      flatten(v[i], fmt::format("{}[{}]", path, i), with_timings, out);
    if (v.empty()) out[path] = "[]";
  } else {
    out[path] = v.dump(-1, ' ', false, json::error_handler_t::replace);
  }
}

}  // namespace

std::string summary_text(const json& r) {
  std::string out = fmt::format("receipt {} — {} (exit {})\n  {}\n", str(r, "id"), str(r, "state"),
                                str(r, "exit"), str(r, "reason"));
  out += fmt::format("  admission {}\n  {} → {}\n", str(r, "admission_sha256"), str(r, "started"),
                     str(r, "finished"));
  if (r.contains("verifications") && r["verifications"].is_array()) {
    size_t pass = 0;
    for (const auto& v : r["verifications"]) pass += str(v, "result") == "pass";
    out += fmt::format("  verifications: {} of {} passed\n", pass, r["verifications"].size());
    for (const auto& v : r["verifications"])
      if (str(v, "result") != "pass")
        out += fmt::format("    FAIL {}: expected {}, observed {}\n", str(v, "target"),
                           str(v, "expected"), str(v, "observed"));
  }
  if (r.contains("grant") && r["grant"].is_object()) {
    const auto& g = r["grant"];
    out += fmt::format("  containment: {} ({}), enforced: {}\n", str(g, "mechanism"),
                       str(g, "mode"), g.value("enforced", json::array()).dump());
    if (!g.value("unenforced_required", json::array()).empty())
      out += fmt::format("    NOT enforced though required: {}\n", g["unenforced_required"].dump());
  }
  if (r.contains("memory") && r["memory"].is_object()) {
    const auto& m = r["memory"];
    out += fmt::format("  memory ({}): peak {} bytes, events {}\n", str(m, "backend"),
                       str(m, "peak_bytes"), m.value("events", json::object()).dump());
    for (const auto& l : m.value("limits", json::array()))
      out +=
          fmt::format("    {} requested {} observed {} {}{}\n", str(l, "name"), str(l, "requested"),
                      str(l, "observed"), l.value("applied", false) ? "applied" : "NOT applied",
                      str(l, "note").empty() ? "" : " (" + str(l, "note") + ")");
  }
  for (const auto& c : r.value("commands", json::array()))
    out += fmt::format("  command {}: exit {} signal {}{}\n", str(c, "label"), str(c, "exit"),
                       str(c, "signal"), c.value("timed_out", false) ? " (timed out)" : "");
  if (r.contains("guard") && r["guard"].is_object())
    out += fmt::format("  guard tripped: {} observed {} limit {}\n", str(r["guard"], "name"),
                       str(r["guard"], "observed"), str(r["guard"], "limit"));
  for (const auto& o : r.value("outputs", json::array()))
    out += fmt::format("  output {} {} bytes sha256:{}\n", str(o, "path"), str(o, "size"),
                       str(o, "sha256"));
  out += fmt::format("  stop confirmed: {}\n", str(r, "stop_confirmed"));
  for (const auto& c : r.value("cleanup", json::array()))
    out += fmt::format("  cleanup {}: {}{}\n", str(c, "action"), str(c, "result"),
                       str(c, "detail").empty() ? "" : " — " + str(c, "detail"));
  if (!r.value("truncated", json::array()).empty())
    out += fmt::format("  shortened to stay bounded: {}\n", r["truncated"].dump());
  return out;
}

std::vector<Difference> diff_receipts(const json& a, const json& b, bool with_timings) {
  std::map<std::string, std::string> fa, fb;
  flatten(a, "", with_timings, fa);
  flatten(b, "", with_timings, fb);
  std::vector<Difference> out;
  auto ia = fa.begin();
  auto ib = fb.begin();
  while (ia != fa.end() || ib != fb.end()) {
    if (ib == fb.end() || (ia != fa.end() && ia->first < ib->first)) {
      out.push_back({ia->first, ia->second, "(absent)"});
      ++ia;
    } else if (ia == fa.end() || ib->first < ia->first) {
      out.push_back({ib->first, "(absent)", ib->second});
      ++ib;
    } else {
      if (ia->second != ib->second) out.push_back({ia->first, ia->second, ib->second});
      ++ia;
      ++ib;
    }
  }
  return out;
}

json to_in_toto(const json& r) {
  json subjects = json::array();
  for (const auto& o : r.value("outputs", json::array()))
    subjects.push_back({{"name", str(o, "path")}, {"digest", {{"sha256", str(o, "sha256")}}}});
  json deps = json::array();
  for (const auto& v : r.value("verifications", json::array()))
    deps.push_back(
        {{"name", str(v, "target")},
         {"annotations", {{"expected", str(v, "expected")}, {"result", str(v, "result")}}}});
  json byproducts = json::array();
  for (const auto& c : r.value("commands", json::array()))
    for (const char* stream : {"stdout", "stderr"})
      if (c.contains(stream) && c[stream].is_object())
        byproducts.push_back({{"name", fmt::format("{}.{}", str(c, "label"), stream)},
                              {"digest", {{"sha256", str(c[stream], "sha256")}}}});
  return {
      {"_type", "https://in-toto.io/Statement/v1"},
      {"subject", subjects},
      {"predicateType", "https://slsa.dev/provenance/v1"},
      {"predicate",
       {{"buildDefinition",
         {{"buildType", "https://github.com/sealrun/sealrun/run/v1"},
          {"externalParameters", {{"admission_sha256", str(r, "admission_sha256")}}},
          {"internalParameters",
           {{"grant", r.value("grant", json())}, {"memory", r.value("memory", json())}}},
          {"resolvedDependencies", deps}}},
        {"runDetails",
         {{"builder", {{"id", "sealrun"}}},
          {"metadata",
           {{"invocationId", str(r, "id")},
            {"startedOn", str(r, "started")},
            {"finishedOn", str(r, "finished")}}},
          {"byproducts", byproducts}}}}},
  };
}

}  // namespace sealrun::receipt
