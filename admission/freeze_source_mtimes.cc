// SPDX-License-Identifier: Apache-2.0
// settle_source_times(): see freeze_source_mtimes.h.
#include "admission/freeze_source_mtimes.h"

#include <fmt/format.h>

#include "fingerprint/source.h"
#include "fingerprint/source_mtimes.h"

namespace sealrun::admission {

using nlohmann::json;

namespace {

std::string text_of(const json& obj, const char* key) {
  return obj.is_object() && obj.contains(key) && obj[key].is_string() ? obj[key].get<std::string>()
                                                                      : std::string();
}

// The one time when nothing chose it: the pinned commit's for git, the documented fixed value
// for a plain tree.
Result<json> default_epoch(const json& source) {
  std::string kind = text_of(source, "kind");
  if (kind != "git" && kind != "bundle") return json(kDefaultSourceEpoch);
  int64_t t = SEALRUN_TRY_CTX(
      read_git_commit_time(text_of(source, "path"), text_of(source, "commit")),
      "the source's commit time (its default SOURCE_DATE_EPOCH; --set source_date_epoch=N "
      "chooses another)");
  return json(t);
}

// The time the draft and --set chose, if any.
Result<std::optional<json>> chosen_epoch(const json& doc, const SourceTimesChoice& choice) {
  if (choice.set_epoch) return std::optional<json>(*choice.set_epoch);
  std::optional<json> top, inner;
  if (doc.contains("source_date_epoch")) top = doc["source_date_epoch"];
  if (choice.given_source.is_object() && choice.given_source.contains("mtime_epoch"))
    inner = choice.given_source["mtime_epoch"];
  if (top && inner && *top != *inner)
    return Error::make(fmt::format(
        "source_date_epoch ({}) and source.mtime_epoch ({}) differ; they are one value "
        "(SOURCE_DATE_EPOCH and the mtime of every entry of the job's source): give one of them, "
        "or set both with --set source_date_epoch=N",
        top->dump(), inner->dump()));
  return top ? top : inner;
}

}  // namespace

bool is_source_epoch_key(std::string_view key) {
  return key == "source_date_epoch" || key == "source.mtime_epoch";
}

Status settle_source_times(json* doc, const SourceTimesChoice& choice) {
  json& source = (*doc)["source"];
  std::string mode = !choice.flag.empty() ? choice.flag : text_of(choice.given_source, "mtimes");
  if (mode.empty()) mode = "fixed";
  auto chosen = SEALRUN_TRY(chosen_epoch(*doc, choice));
  std::string kind = text_of(source, "kind");
  if (mode == "preserved") {
    if (kind != "tree")
      return Error::make(fmt::format(
          "source mtimes \"preserved\": the source {} is a {} source, and git stores no mtimes; "
          "its entries all get the commit's time (\"fixed\", the default)",
          text_of(source, "path"), kind));
    // A time chosen (e.g. by a draft frozen "fixed" before) stays SOURCE_DATE_EPOCH.
    auto listed = SEALRUN_TRY_CTX(list_mtimes(text_of(source, "path")), "source mtimes");
    json list = json::array();
    for (const MtimeEntry& e : listed)
      list.push_back({{"path", e.path}, {"mtime", format_mtime(e.mtime)}});
    source["mtimes"] = "preserved";
    source["mtimes_list"] = std::move(list);
    source["mtimes_sha256"] = mtimes_digest(listed);
    (*doc)["source_date_epoch"] = chosen ? *chosen : SEALRUN_TRY(default_epoch(source));
    return ok_status();
  }
  if (mode != "fixed")
    return Error::make(
        fmt::format("source mtimes: expected \"fixed\" or \"preserved\", got \"{}\"", mode));
  json epoch = chosen ? *chosen : SEALRUN_TRY(default_epoch(source));
  source["mtimes"] = "fixed";
  source["mtime_epoch"] = epoch;
  (*doc)["source_date_epoch"] = epoch;
  return ok_status();
}

}  // namespace sealrun::admission
