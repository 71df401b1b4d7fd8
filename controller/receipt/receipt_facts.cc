// SPDX-License-Identifier: Apache-2.0
// Facts read out of a receipt: see receipt_facts.h.
#include "controller/receipt/receipt_facts.h"

#include <fmt/format.h>

#include <algorithm>

#include "fingerprint/hash_progress.h"

namespace sealrun::receipt {

using nlohmann::json;

namespace {

// A non-negative integer member (a parsed receipt has them unsigned; a built one may not), or 0.
uint64_t count_of(const json& doc, const char* key) {
  if (!doc.is_object() || !doc.contains(key)) return 0;
  const json& v = doc[key];
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  return v.is_number_integer() && v.get<int64_t>() > 0 ? static_cast<uint64_t>(v.get<int64_t>())
                                                       : 0;
}

const json& member(const json& doc, const char* key) {
  static const json kNull;
  return doc.is_object() && doc.contains(key) ? doc[key] : kNull;
}

void add(std::vector<LimitHit>& hits, std::string name, std::string detail) {
  for (auto& h : hits)
    if (h.name == name) {
      if (h.detail.empty()) h.detail = std::move(detail);
      return;
    }
  hits.push_back({std::move(name), std::move(detail)});
}

}  // namespace

std::string json_text(const json& v) {
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

json member_list(const json& doc, const char* key) {
  const json& v = member(doc, key);
  return v.is_array() ? v : json::array();
}

std::vector<LimitHit> limits_hit(const json& r) {
  std::vector<LimitHit> hits;
  for (const auto& name : member_list(r, "limits_hit"))
    if (name.is_string()) add(hits, name.get<std::string>(), "");
  const json& events = member(member(r, "memory"), "events");
  if (uint64_t kills = count_of(events, "oom_kill"); kills > 0)
    add(hits, "memory", fmt::format("{} process(es) killed for memory at memory_max_bytes", kills));
  else if (uint64_t max = count_of(events, "max"); max > 0)
    add(hits, "memory", fmt::format("memory_max_bytes reached {} time(s)", max));
  if (uint64_t high = count_of(events, "high"); high > 0)
    add(hits, "memory_high", fmt::format("throttled at memory_high_bytes {} time(s)", high));
  const json& guard = member(r, "guard");
  if (guard.is_object())
    add(hits, "growth",
        fmt::format("guard {}: observed {}, limit {}", member_text(guard, "name"),
                    member_text(guard, "observed"), member_text(guard, "limit")));
  for (const auto& c : member_list(r, "commands"))
    if (c.is_object() && c.contains("timed_out") && c["timed_out"] == true)
      add(hits, "wall_clock",
          fmt::format("command {} stopped at its wall clock", member_text(c, "label")));
  return hits;
}

std::vector<std::pair<std::string, size_t>> view_kinds(const json& r) {
  std::vector<std::pair<std::string, size_t>> kinds;
  for (const auto& v : member_list(r, "view")) {
    std::string kind = member_text(v, "kind");
    auto it =
        std::find_if(kinds.begin(), kinds.end(), [&](const auto& k) { return k.first == kind; });
    if (it == kinds.end())
      kinds.emplace_back(kind, 1);
    else
      ++it->second;
  }
  return kinds;
}

std::string bytes_text(const json& v) {
  if (v.is_null()) return "unknown";
  if (v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0)) {
    uint64_t n =
        v.is_number_unsigned() ? v.get<uint64_t>() : static_cast<uint64_t>(v.get<int64_t>());
    return n >= (uint64_t{1} << 63) ? "unlimited" : binary_size_text(n);
  }
  return json_text(v);
}

std::vector<report::PlotPoint> sample_series(const json& r, const char* key) {
  std::vector<report::PlotPoint> points;
  for (const auto& s : member_list(r, "samples")) {
    if (!s.is_object() || !s.contains(key) || !s[key].is_number_integer()) continue;
    if (!s.contains("t_ms") || !s["t_ms"].is_number_integer()) continue;
    points.push_back({std::max<int64_t>(0, s["t_ms"].get<int64_t>()), count_of(s, key)});
  }
  return points;
}

std::string input_digest(const json& input) {
  const json& d = member(input, "digest");
  if (!d.is_object() || d.empty()) return "";
  auto it = d.begin();
  return it.key() + ":" +
         (it.value().is_string() ? it.value().get<std::string>() : json_text(it.value()));
}

}  // namespace sealrun::receipt
