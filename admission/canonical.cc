// SPDX-License-Identifier: Apache-2.0
// The canonical spelling of an admission: every field written out (defaults included, except the
// newer opt-in mount switches, see below), keys in sorted order, objects expanded with two-space
// indents, and the members of arrays (argv elements, manifest entries, host tools) one per line in
// compact form — readable in a review, compact enough that a manifest of several thousand files
// stays under the 1 MiB cap, and the same bytes every time, so freezing twice gives the same
// SHA-256.
#include <ctime>

#include "admission/canonical_json.h"
#include "admission/document.h"

namespace sealrun::admission {

using nlohmann::json;

json admission_to_json(const AdmissionDocument& doc) {
  json j = json::object();
  j["schema"] = std::string(kSchema);
  j["command"] = {{"argv", doc.command.argv}, {"cwd", doc.command.cwd}};
  j["source_date_epoch"] = doc.source_date_epoch;
  j["env"] = json::object();
  for (const auto& [k, v] : doc.env) j["env"][k] = v;

  const SourcePin& s = doc.source;
  json src = {{"kind", std::string(source_kind_name(s.kind))}, {"path", s.path}};
  if (s.kind == SourceKind::kBundle) src["path_sha256"] = s.path_sha256;
  if (s.kind != SourceKind::kTree) {
    src["commit"] = s.commit;
    src["tree"] = s.tree;
  }
  src["manifest"] = json::array();
  for (const ManifestEntry& e : s.manifest)
    src["manifest"].push_back({{"path", e.path}, {"bytes", e.bytes}, {"sha256", e.sha256}});
  src["manifest_sha256"] = s.manifest_sha256;
  src["mtimes"] = std::string(source_mtimes_name(s.mtimes));
  if (s.mtimes == SourceMtimes::kFixed) {
    src["mtime_epoch"] = doc.source_date_epoch;  // one value, written in both places
  } else {
    src["mtimes_sha256"] = s.mtimes_sha256;
    src["mtimes_list"] = json::array();
    for (const MtimeEntry& e : s.mtimes_list)
      src["mtimes_list"].push_back({{"path", e.path}, {"mtime", format_mtime(e.mtime)}});
  }
  j["source"] = std::move(src);

  // Absent when the admission has none (a learned closure is its toolchain): the key is left out.
  if (doc.toolchain)
    j["toolchain"] = {{"root", doc.toolchain->root},
                      {"tree_sha256", doc.toolchain->tree_sha256},
                      {"mount_path", doc.toolchain->mount_path}};
  if (doc.image) {
    j["image"] = {{"archive", doc.image->archive},
                  {"archive_sha256", doc.image->archive_sha256},
                  {"image_id", doc.image->image_id},
                  {"diff_ids", doc.image->diff_ids}};
  }
  j["host_tools"] = json::array();
  for (const HostToolPin& t : doc.host_tools)
    j["host_tools"].push_back({{"path", t.path}, {"sha256", t.sha256}});
  // The view's pins, written only when present so that admissions without them keep their bytes.
  if (!doc.trees.empty()) {
    j["trees"] = json::array();
    for (const TreePin& t : doc.trees)
      j["trees"].push_back(
          {{"host_path", t.host_path}, {"job_path", t.job_path}, {"tree_sha256", t.tree_sha256}});
  }
  if (!doc.host_files.empty()) {
    j["host_files"] = json::array();
    for (const HostFilePin& f : doc.host_files)
      j["host_files"].push_back({{"path", f.path}, {"sha256", f.sha256}});
  }
  if (!doc.host_links.empty()) {
    j["host_links"] = json::array();
    for (const HostLinkPin& l : doc.host_links)
      j["host_links"].push_back({{"path", l.path}, {"target", l.target}});
  }
  if (!doc.host_dirs.empty()) j["host_dirs"] = doc.host_dirs;
  j["mounts"] = {{"source", doc.mounts.source},
                 {"output", doc.mounts.output},
                 {"scratch", doc.mounts.scratch},
                 {"tmp", doc.mounts.tmp}};
  // Written only when not the default, unlike every other field: admissions frozen before these
  // keys existed keep their exact bytes (and so their SHA-256) when frozen again.
  if (doc.mounts.source_writable) j["mounts"]["source_writable"] = true;
  if (doc.mounts.outputs_from != OutputsFrom::kOutput)
    j["mounts"]["outputs_from"] = std::string(outputs_from_name(doc.mounts.outputs_from));
  const Limits& l = doc.limits;
  j["limits"] = {
      {"memory_high_bytes", l.memory_high_bytes}, {"memory_max_bytes", l.memory_max_bytes},
      {"swap_max_bytes", l.swap_max_bytes},       {"pids_max", l.pids_max},
      {"wall_clock_s", l.wall_clock_s},           {"outer_s", l.outer_s},
      {"owned_max_bytes", l.owned_max_bytes},     {"result_max_bytes", l.result_max_bytes},
      {"free_min_bytes", l.free_min_bytes},       {"ceiling_bytes", l.ceiling_bytes},
      {"reserve_bytes", l.reserve_bytes},         {"census_interval_ms", l.census_interval_ms},
      {"receipt_max_bytes", l.receipt_max_bytes}};
  // Written only when given, so admissions frozen before the key existed keep their bytes.
  if (l.owned_max_inodes != 0) j["limits"]["owned_max_inodes"] = l.owned_max_inodes;
  if (l.result_max_inodes != 0) j["limits"]["result_max_inodes"] = l.result_max_inodes;
  j["containment"] = {{"required", doc.containment.required.names()},
                      {"network", doc.containment.network},
                      {"mechanism", std::string(mechanism_choice_name(doc.containment.mechanism))}};
  if (doc.expires_at) j["expires_at"] = *doc.expires_at;
  if (doc.reference)
    j["reference"] = {{"value", doc.reference->value}, {"pattern", doc.reference->pattern}};
  return j;
}

namespace {

void pretty(const json& v, int indent, std::string* out) {
  std::string pad(static_cast<size_t>(indent) + 2, ' ');
  if (v.is_object() && !v.empty()) {
    *out += "{\n";
    size_t i = 0;
    for (const auto& [k, child] : v.items()) {
      *out += pad + json(k).dump() + ": ";
      pretty(child, indent + 2, out);
      *out += ++i < v.size() ? ",\n" : "\n";
    }
    *out += std::string(static_cast<size_t>(indent), ' ') + "}";
  } else if (v.is_array() && !v.empty()) {
    *out += "[\n";
    for (size_t i = 0; i < v.size(); ++i) {
      *out += pad + v[i].dump();
      *out += i + 1 < v.size() ? ",\n" : "\n";
    }
    *out += std::string(static_cast<size_t>(indent), ' ') + "]";
  } else {
    *out += v.dump();
  }
}

int digits(std::string_view s, size_t pos, size_t n) {
  if (pos + n > s.size()) return -1;
  int x = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return -1;
    x = x * 10 + (s[i] - '0');
  }
  return x;
}

}  // namespace

std::string canonical_json_bytes(const json& doc) {
  std::string out;
  pretty(doc, 0, &out);
  out += "\n";
  return out;
}

std::string canonical_admission_bytes(const AdmissionDocument& doc) {
  return canonical_json_bytes(admission_to_json(doc));
}

std::optional<time_t> parse_rfc3339(std::string_view s) {
  // YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM), RFC 3339 section 5.6.
  if (s.size() < 20 || s.size() > 40) return std::nullopt;
  int year = digits(s, 0, 4), mon = digits(s, 5, 2), day = digits(s, 8, 2);
  int hour = digits(s, 11, 2), min = digits(s, 14, 2), sec = digits(s, 17, 2);
  if (s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') || s[13] != ':' || s[16] != ':')
    return std::nullopt;
  if (year < 1970 || mon < 1 || mon > 12 || day < 1 || day > 31 || hour < 0 || hour > 23 ||
      min < 0 || min > 59 || sec < 0 || sec > 60)
    return std::nullopt;
  size_t pos = 19;
  if (pos < s.size() && s[pos] == '.') {
    size_t start = ++pos;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') ++pos;
    if (pos == start) return std::nullopt;
  }
  long offset = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int oh = digits(s, pos + 1, 2), om = digits(s, pos + 4, 2);
    if (oh < 0 || oh > 23 || om < 0 || om > 59 || pos + 6 > s.size() || s[pos + 3] != ':')
      return std::nullopt;
    offset = (s[pos] == '+' ? 1 : -1) * (oh * 3600L + om * 60L);
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != s.size()) return std::nullopt;
  struct tm tm = {};
  tm.tm_year = year - 1900;
  tm.tm_mon = mon - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = min;
  tm.tm_sec = sec;
  time_t t = timegm(&tm);
  // timegm normalises Feb 30 into March; such a date is not a date.
  struct tm back = {};
  gmtime_r(&t, &back);
  if (back.tm_mday != day || back.tm_mon != mon - 1) return std::nullopt;
  return t - offset;
}

}  // namespace sealrun::admission
