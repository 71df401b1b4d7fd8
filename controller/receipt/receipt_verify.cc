// SPDX-License-Identifier: Apache-2.0
// `sealrun receipt verify`: the receipt's own digest and its internal consistency, re-derived from
// the bytes alone. Every check is reported (pass or fail), not just the first failure, so an
// auditor sees the whole picture.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>

#include "controller/receipt/receipt.h"
#include "controller/receipt/receipt_fields.h"
#include "core/hex.h"
#include "core/strict_json.h"
#include "fingerprint/sha256.h"

namespace sealrun::receipt {

using nlohmann::json;

namespace {

class Findings {
 public:
  void add(std::string check, bool pass, std::string detail = {}) {
    out_.push_back({std::move(check), pass, std::move(detail)});
  }
  std::vector<VerifyFinding> take() { return std::move(out_); }

 private:
  std::vector<VerifyFinding> out_;
};

bool has(const json& doc, const char* key, json::value_t type) {
  return doc.contains(key) && doc[key].type() == type;
}

bool kind_allowed(const json& v, uint8_t kinds) {
  switch (v.type()) {
    case json::value_t::string:
      return (kinds & kJsonString) != 0;
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return (kinds & kJsonInteger) != 0;
    case json::value_t::boolean:
      return (kinds & kJsonBool) != 0;
    case json::value_t::array:
      return (kinds & kJsonArray) != 0;
    case json::value_t::object:
      return (kinds & kJsonObject) != 0;
    case json::value_t::null:
      return (kinds & kJsonNull) != 0;
    default:
      return false;
  }
}

// Every field of the table (receipt_fields.h): required ones present, each with its type.
void check_shape(const json& doc, Findings& f) {
  std::vector<std::string> missing;
  for (const auto& field : kReceiptFields) {
    std::string key(field.key);
    if (!doc.contains(key)) {
      if (field.required) missing.push_back(key);
    } else if (!kind_allowed(doc[key], field.kinds)) {
      missing.push_back(key + " (mistyped)");
    }
  }
  f.add("fields", missing.empty(),
        missing.empty() ? "every contract field present with its type"
                        : fmt::format("missing or mistyped: {}", fmt::join(missing, ", ")));
}

void check_verdict(const json& doc, Findings& f) {
  std::string state = doc.value("state", "");
  int64_t exit =
      doc.contains("exit") && doc["exit"].is_number_integer() ? doc["exit"].get<int64_t>() : -1;
  static const std::set<std::string> kStates = {"built", "failed", "not_run"};
  f.add("state", kStates.count(state) == 1, fmt::format("state {}", state));
  static const std::set<int64_t> kExits = {0, 2, 3, 4, 5, 6, 7};
  f.add("exit code", kExits.count(exit) == 1, fmt::format("exit {}", exit));
  std::string reason = doc.value("reason", "");

  if (state == "built") {
    std::vector<std::string> problems;
    if (exit != 0) problems.push_back(fmt::format("exit is {}", exit));
    if (!doc.value("stop_confirmed", false)) problems.push_back("stop_confirmed is false");
    if (has(doc, "commands", json::value_t::array)) {
      if (doc["commands"].empty()) problems.push_back("no command recorded");
      for (const auto& c : doc["commands"]) {
        bool ok = c.contains("exit") && c["exit"].is_number_integer() && c["exit"] == 0 &&
                  c.value("signal", 0) == 0 && !c.value("timed_out", false);
        if (!ok)
          problems.push_back(fmt::format("command {} did not exit 0", c.value("label", "?")));
      }
    }
    // A receipt shortened to its verdict counts what it no longer lists.
    for (const char* count : {"commands_failed", "verifications_failed"})
      if (doc.contains(count) && doc[count] != 0)
        problems.push_back(fmt::format("{} is {}", count, doc[count].dump()));
    if (has(doc, "verifications", json::value_t::array))
      for (const auto& v : doc["verifications"])
        if (v.value("result", "") != "pass")
          problems.push_back(fmt::format("verification {} failed", v.value("target", "?")));
    if (doc.contains("guard") && !doc["guard"].is_null()) problems.push_back("a guard tripped");
    if (has(doc, "cleanup", json::value_t::array))
      for (const auto& c : doc["cleanup"])
        if (c.value("result", "") != "ok")
          problems.push_back(fmt::format("cleanup {} failed", c.value("action", "?")));
    f.add("built is consistent", problems.empty(),
          problems.empty() ? "exit 0, every command exit 0, stop confirmed, all checks passed"
                           : fmt::format("{}", fmt::join(problems, "; ")));
  } else {
    f.add("failure has a reason", !reason.empty(),
          reason.empty() ? "state is not built but reason is empty" : reason);
    f.add("failure has a failing exit", exit != 0, fmt::format("exit {}", exit));
  }
  if (state == "not_run" && has(doc, "commands", json::value_t::array)) {
    bool job_ran = false;
    for (const auto& c : doc["commands"]) job_ran = job_ran || c.value("label", "") == "job";
    f.add("not_run ran no job", !job_ran, job_ran ? "a job command is recorded" : "");
  }
  if (has(doc, "commands", json::value_t::array) && !doc["commands"].empty() &&
      doc.value("state", "") != "not_run")
    f.add("stop confirmed after a job", doc.value("stop_confirmed", false) || exit == 7,
          "a job ran: the stop must be confirmed, or exit 7 says it was not");
}

void check_digests(const json& doc, Findings& f) {
  // A regular file (no "kind") carries its digest; a symlink, fifo, socket or device carries
  // what it is instead (docs/receipt.md). At most kNamed names: the count says the rest.
  constexpr size_t kNamed = 10;
  std::vector<std::string> bad;
  size_t bad_total = 0;
  if (has(doc, "outputs", json::value_t::array))
    for (const auto& o : doc["outputs"]) {
      bool file = o.is_object() && !o.contains("kind");
      bool ok = o.is_object() && (!file || is_sha256_hex(o.value("sha256", "")));
      if (ok) continue;
      if (++bad_total <= kNamed)
        bad.push_back(o.is_object() ? o.value("path", o.value("path_b64", "?")) : "?");
    }
  std::string more = bad_total > kNamed ? fmt::format(" and {} more", bad_total - kNamed) : "";
  f.add("output digests", bad.empty(),
        bad.empty() ? "" : fmt::format("not a sha256: {}{}", fmt::join(bad, ", "), more));
}

// docs/view.md (the job's view is only what was pinned): every read-only entry of the view names
// what pins its bytes, except the places the kernel makes (/proc, /dev, podman's /sys) and the
// private /tmp.
void check_view(const json& doc, Findings& f) {
  if (!doc.contains("view") || !doc["view"].is_array() || doc["view"].empty()) {
    f.add("view pinned", true, "no view recorded (no job was started)");
    return;
  }
  static const std::set<std::string> kKinds = {
      "source", "toolchain", "tree", "image", "closure",   "out",  "scratch", "tmp",
      "proc",   "dev",       "link", "sys",   "generated", "init", "dir"};
  static const std::set<std::string> kKernelMade = {"proc", "dev", "tmp", "sys"};
  std::vector<std::string> bad;
  for (const json& e : doc["view"]) {
    std::string path = e.is_object() ? e.value("job_path", "?") : "?";
    std::string kind = e.is_object() && e.contains("kind") && e["kind"].is_string()
                           ? e["kind"].get<std::string>()
                           : "";
    if (!e.is_object() || kKinds.count(kind) == 0) {
      bad.push_back(fmt::format("{} (unknown kind \"{}\")", path, kind));
      continue;
    }
    bool writable =
        e.contains("writable") && e["writable"].is_boolean() && e["writable"].get<bool>();
    bool pinned = e.contains("pin") && e["pin"].is_string() && !e["pin"].get<std::string>().empty();
    if (!writable && !pinned && kKernelMade.count(kind) == 0)
      bad.push_back(fmt::format("{} ({}, read-only, no pin)", path, kind));
  }
  f.add("view pinned", bad.empty(),
        bad.empty() ? fmt::format("{} entries, every read-only one pinned", doc["view"].size())
                    : fmt::format("unpinned: {}", fmt::join(bad, ", ")));
}

}  // namespace

Result<std::vector<VerifyFinding>> verify_receipt_bytes(std::string_view bytes) {
  Findings f;
  f.add("size", bytes.size() <= 1024 * 1024, fmt::format("{} bytes (limit 1 MiB)", bytes.size()));
  auto parsed = parse_strict_json(bytes);
  if (!parsed) return std::move(parsed).error().context("receipt is not valid JSON");
  const json& doc = *parsed;
  if (!doc.is_object()) return Error::make("receipt is not a JSON object");
  f.add("schema", doc.value("schema", "") == kSchema,
        fmt::format("schema {}", doc.value("schema", "(none)")));

  bool digest_shape = doc.contains("digest") && doc["digest"].is_object() &&
                      doc["digest"].value("algorithm", "") == "sha256";
  std::string recorded = digest_shape ? doc["digest"].value("value", "") : "";
  std::string computed = sha256_hex(digest_payload(doc));
  f.add("digest", digest_shape && recorded == computed,
        digest_shape ? fmt::format("recorded {}, computed {}", recorded, computed)
                     : "no sha256 digest member");
  check_shape(doc, f);
  check_verdict(doc, f);
  check_digests(doc, f);
  check_view(doc, f);
  return f.take();
}

}  // namespace sealrun::receipt
