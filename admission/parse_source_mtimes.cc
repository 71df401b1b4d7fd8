// SPDX-License-Identifier: Apache-2.0
// parse_source_mtimes(): see parse_source_mtimes.h.
#include "admission/parse_source_mtimes.h"

#include <fmt/format.h>

#include "admission/path_rules.h"
#include "core/strict_json.h"

namespace sealrun::admission {

using nlohmann::json;

namespace {

constexpr size_t kMaxListed = 1000000;

void parse_list(const json& v, std::vector<MtimeEntry>* out, const FieldReader& r,
                const ProblemSink& problem) {
  if (!r.array(v, "source.mtimes_list", kMaxListed)) return;
  for (size_t i = 0; i < v.size(); ++i) {
    std::string p = json_path_index("source.mtimes_list", i);
    const json& e = v[i];
    if (!r.object(e, p) || !r.keys(e, p, {"path", "mtime"}, {})) continue;
    MtimeEntry entry;
    std::string text;
    bool good = r.string(e["path"], p + ".path", &entry.path);
    if (good && entry.path != ".") {
      if (auto why = relative_path_problem(entry.path)) {
        problem(p + ".path", *why);
        good = false;
      }
    }
    if (good && !out->empty() && !(out->back().path < entry.path)) {
      problem(p + ".path", fmt::format("\"{}\" is out of order or repeated (entries are sorted by "
                                       "raw path bytes, each path once)",
                                       entry.path));
      good = false;
    }
    if (r.string(e["mtime"], p + ".mtime", &text)) {
      auto t = parse_mtime(text);
      if (t)
        entry.mtime = *t;
      else
        problem(p + ".mtime",
                fmt::format("\"{}\" is not SECONDS.NANOSECONDS (nine digits after the dot)", text));
      good = good && t.has_value();
    } else {
      good = false;
    }
    if (good) out->push_back(std::move(entry));
  }
}

}  // namespace

std::string_view source_mtimes_name(SourceMtimes mtimes) {
  return mtimes == SourceMtimes::kPreserved ? "preserved" : "fixed";
}

void parse_source_mtimes(const json& root, AdmissionDocument* doc, const ProblemSink& problem) {
  if (!root.is_object() || !root.contains("source") || !root["source"].is_object()) return;
  const json& v = root["source"];
  FieldReader r(problem);
  SourcePin& s = doc->source;
  std::string mode = "fixed";
  if (v.contains("mtimes") && !r.string(v["mtimes"], "source.mtimes", &mode)) return;
  if (mode == "fixed") {
    s.mtimes = SourceMtimes::kFixed;
    for (const char* key : {"mtimes_sha256", "mtimes_list"})
      if (v.contains(key))
        problem(std::string("source.") + key,
                "only with source.mtimes \"preserved\" (\"fixed\" gives every entry "
                "source.mtime_epoch)");
    uint64_t read = 0;
    if (!v.contains("mtime_epoch") ||
        !r.integer(v["mtime_epoch"], "source.mtime_epoch", 0, kMaxSourceDateEpoch, &read))
      return;  // an older admission: fixed at source_date_epoch
    const auto epoch = static_cast<int64_t>(read);
    const json* sde = root.contains("source_date_epoch") ? &root["source_date_epoch"] : nullptr;
    if (sde && sde->is_number_integer() && doc->source_date_epoch != epoch) {
      problem("source.mtime_epoch",
              fmt::format("{} differs from source_date_epoch ({}); they are one value "
                          "(SOURCE_DATE_EPOCH and the mtime of every entry of the job's source): "
                          "give one of them, or both equal",
                          epoch, doc->source_date_epoch));
      return;
    }
    doc->source_date_epoch = epoch;
    return;
  }
  if (mode != "preserved") {
    problem("source.mtimes", fmt::format("expected \"fixed\" or \"preserved\", got \"{}\"", mode));
    return;
  }
  s.mtimes = SourceMtimes::kPreserved;
  if (v.contains("kind") && v["kind"].is_string() && v["kind"] != "tree")
    problem("source.mtimes",
            fmt::format("\"preserved\" needs a plain tree source, not kind \"{}\": git stores no "
                        "mtimes, so every entry of a git or bundle source gets one time, its "
                        "commit's (\"fixed\")",
                        v["kind"].get<std::string>()));
  if (v.contains("mtime_epoch"))
    problem("source.mtime_epoch",
            "only with source.mtimes \"fixed\" (\"preserved\" keeps the host's mtimes)");
  bool listed = v.contains("mtimes_list");
  bool digested = v.contains("mtimes_sha256");
  if (!listed) problem("source.mtimes_list", "missing (required with source.mtimes \"preserved\")");
  if (!digested)
    problem("source.mtimes_sha256", "missing (required with source.mtimes \"preserved\")");
  if (!listed || !digested) return;
  parse_list(v["mtimes_list"], &s.mtimes_list, r, problem);
  // The digest is compared only with a list read whole (a bad entry is reported on its own).
  bool list_whole = v["mtimes_list"].is_array() && s.mtimes_list.size() == v["mtimes_list"].size();
  if (!r.sha256(v["mtimes_sha256"], "source.mtimes_sha256", &s.mtimes_sha256) || !list_whole)
    return;
  std::string digest = mtimes_digest(s.mtimes_list);
  if (digest != s.mtimes_sha256)
    problem("source.mtimes_sha256",
            fmt::format("does not match source.mtimes_list (whose canonical listing has SHA-256 "
                        "{})",
                        digest));
}

}  // namespace sealrun::admission
