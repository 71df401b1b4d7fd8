// SPDX-License-Identifier: Apache-2.0
// The rules of `receipt diff` (receipt_diff.h), as tables: which class each receipt field belongs
// to, which fields differ in every run of the same thing (left out unless --all), and what
// identifies an element of each array. docs/receipt.md ("Comparing two receipts") lists the same;
// a field the writer adds must be classified here (a unit test checks every field of
// receipt_fields.h has a row).
#include <algorithm>
#include <string>

#include "controller/receipt/receipt_diff.h"

namespace sealrun::receipt::diff {

using nlohmann::json;

namespace {

struct Rule {
  std::string_view pattern;
  Class cls;
};

// Nested exceptions to the top-level class. The longest matching pattern wins.
constexpr Rule kNestedRules[] = {
    // How a job ran is an input where it repeats the admitted command.
    {"commands[].argv", Class::kInputs},
    // When each command ran, not what it did.
    {"commands[].started", Class::kPerRun},
    {"commands[].finished", Class::kPerRun},
    // What the kernel measured of this run (the peak moves by pages from run to run), and which
    // group set the effective limit: the run's own group, named with its id and pid.
    {"memory.peak_bytes", Class::kPerRun},
    {"memory.swap_used_bytes", Class::kPerRun},
    {"memory.limits[].effective_set_by", Class::kPerRun},
    // The outcome of the memory limits: OOM kills and throttling are what the job met.
    {"memory.events", Class::kOutputs},
    // Whether the owned file system came from a template or mkfs: a cache.
    {"owned_space.made", Class::kPerRun},
    {"result_space.made", Class::kPerRun},
    // Whether the probe's findings came from its cache (its key, what was probed, stays).
    {"grant.probe.cached", Class::kPerRun},
    {"grant.probe.note", Class::kPerRun},
    // Each run's own job uid and gid, taken from a pool: two runs of the same thing differ here.
    {"grant.job_uid", Class::kPerRun},
    {"grant.job_gid", Class::kPerRun},
    // How each pinned tree was verified (the digest cache), not what it holds.
    {"pin_cache[].status", Class::kPerRun},
    {"pin_cache[].checked_by_stat", Class::kPerRun},
    {"pin_cache[].rehashed", Class::kPerRun},
    {"pin_cache[].digest_from_cache", Class::kPerRun},
    {"pin_cache[].stored", Class::kPerRun},
    {"pin_cache[].reason", Class::kPerRun},
    // How this run checked a verification (a pin image built now or reused), not what it checked.
    {"verifications[].detail", Class::kPerRun},
    // Free text with pids, loop devices, the run's paths and byte counts; `result` is the verdict.
    {"cleanup[].detail", Class::kPerRun},
    // When the guard tripped (its name, limit and observed figure stay).
    {"guard.t_ms", Class::kPerRun},
    // The Slurm job and step numbers of this run (node, cluster, partition, user stay).
    {"slurm.job_id", Class::kPerRun},
    {"slurm.step_id", Class::kPerRun},
    {"slurm.array_job_id", Class::kPerRun},
    {"slurm.array_task_id", Class::kPerRun},
    {"slurm.proc_id", Class::kPerRun},
    {"slurm.local_id", Class::kPerRun},
};

// A view entry is an input when it binds something the admission pins (the source, the
// toolchain, trees, closure files, the image, links and directories of a learned closure), the
// environment when sealrun made it for the run (generated /etc files, /proc, /dev, /tmp, /out,
// /scratch, sysfs, podman's init).
Class view_entry_class(const json& entry) {
  static constexpr std::string_view kInputKinds[] = {"source",  "toolchain", "tree", "image",
                                                     "closure", "link",      "dir"};
  if (entry.is_object() && entry.contains("kind") && entry["kind"].is_string()) {
    std::string kind = entry["kind"].get<std::string>();
    for (auto k : kInputKinds)
      if (k == kind) return Class::kInputs;
  }
  return Class::kEnvironment;
}

bool prefix_at_boundary(std::string_view pattern, std::string_view rule) {
  if (pattern.substr(0, rule.size()) != rule) return false;
  return pattern.size() == rule.size() || pattern[rule.size()] == '.' ||
         pattern[rule.size()] == '[';
}

bool id_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

bool digits_and_dots(std::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return c == '.' || (c >= '0' && c <= '9'); });
}

// Whether `dir` ends in a component under which the state directory keeps one entry per run
// (docs/state-directory.md): results/ID, owned/ID (and owned/ID+out), exports/ID.PID.N,
// refusals/ID.
bool below_run_place(std::string_view dir) {
  size_t slash = dir.rfind('/');
  std::string_view last = slash == std::string_view::npos ? dir : dir.substr(slash + 1);
  return last == "results" || last == "owned" || last == "exports" || last == "refusals";
}

}  // namespace

const std::vector<TopLevelClass>& top_level_classes() {
  static const std::vector<TopLevelClass> kTable = {
      // What ran, on what: the admission and every check of its pins.
      {"admission_sha256", Class::kInputs},
      {"admission", Class::kInputs},
      {"verifications", Class::kInputs},
      {"verifications_total", Class::kInputs},
      {"verifications_failed", Class::kInputs},
      {"pin_cache", Class::kInputs},
      // Where and how it ran.
      {"schema", Class::kEnvironment},
      {"sealrun_version", Class::kEnvironment},
      {"signing", Class::kEnvironment},
      {"rebuild_of", Class::kEnvironment},
      {"slurm", Class::kEnvironment},
      {"grant", Class::kEnvironment},
      {"memory", Class::kEnvironment},
      {"owned_space", Class::kEnvironment},
      {"result_space", Class::kEnvironment},
      {"view", Class::kEnvironment},  // by entry: see view_entry_class
      {"notes", Class::kEnvironment},
      // What came of it.
      {"state", Class::kOutputs},
      {"exit", Class::kOutputs},
      {"reason", Class::kOutputs},
      {"commands", Class::kOutputs},
      {"commands_total", Class::kOutputs},
      {"commands_failed", Class::kOutputs},
      {"guard", Class::kOutputs},
      {"limits_hit", Class::kOutputs},
      {"stop_confirmed", Class::kOutputs},
      {"cleanup", Class::kOutputs},
      {"cleanup_total", Class::kOutputs},
      {"cleanup_failed", Class::kOutputs},
      {"not_finished", Class::kOutputs},
      {"outputs", Class::kOutputs},
      {"outputs_total", Class::kOutputs},
      {"outputs_list_sha256", Class::kOutputs},
      {"outputs_bytes", Class::kOutputs},
      {"truncated", Class::kOutputs},
      // Differ in every run of the same thing.
      {"id", Class::kPerRun},
      {"started", Class::kPerRun},
      {"finished", Class::kPerRun},
      {"digest", Class::kPerRun},  // the receipt's own digest, only at the top level
      {"samples", Class::kPerRun},
      {"samples_dropped", Class::kPerRun},
  };
  return kTable;
}

Class class_of(std::string_view pattern, const json& element) {
  size_t best = 0;
  Class cls = Class::kOutputs;  // a field this version does not know counts, as an outcome
  for (const auto& t : top_level_classes())
    if (prefix_at_boundary(pattern, t.field) && t.field.size() > best) {
      best = t.field.size();
      cls = t.cls;
    }
  if (best == 4 && pattern.substr(0, 4) == "view") cls = view_entry_class(element);
  for (const auto& r : kNestedRules)
    if (prefix_at_boundary(pattern, r.pattern) && r.pattern.size() > best) {
      best = r.pattern.size();
      cls = r.cls;
    }
  return cls;
}

ArrayRule array_rule(std::string_view pattern, const json& a, const json& b) {
  struct Keyed {
    std::string_view pattern;
    ArrayRule rule;
  };
  static constexpr Keyed kRules[] = {
      {"view", {Match::kByKey, "job_path"}},
      {"admission.inputs", {Match::kByKey, "name"}},
      {"outputs", {Match::kOutputs, ""}},
      {"verifications", {Match::kByKey, "target"}},
      {"commands", {Match::kByKey, "label"}},
      {"cleanup", {Match::kByKey, "action"}},
      {"pin_cache", {Match::kByKey, "root"}},
      {"memory.limits", {Match::kByKey, "name"}},
      {"rebuild_of.variations", {Match::kByKey, "name"}},
      {"admission.command.argv", {Match::kWhole, ""}},
      {"commands[].argv", {Match::kWhole, ""}},
      {"samples", {Match::kByPosition, ""}},
  };
  for (const auto& k : kRules)
    if (k.pattern == pattern) return k.rule;
  auto scalars = [](const json& v) {
    return std::all_of(v.begin(), v.end(), [](const json& e) { return e.is_primitive(); });
  };
  return scalars(a) && scalars(b) ? ArrayRule{Match::kByValue, ""}
                                  : ArrayRule{Match::kByPosition, ""};
}

std::string mask_run_id(std::string_view s, std::string_view id) {
  if (id.empty() || s.find('/') == std::string_view::npos) return std::string(s);
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    if (!id_char(s[i])) {
      out += s[i++];
      continue;
    }
    size_t end = i;
    while (end < s.size() && id_char(s[end])) ++end;
    std::string_view token = s.substr(i, end - i);
    // Only whole path components, right below one of the state directory's per-run places: an id
    // may be any word ("usr"), and /usr/bin is no run's place.
    // The result space's mount point, owned/ID+out (run_result_space.h), names the run too.
    std::string_view rest = s.substr(end);
    bool result_space = rest.starts_with("+out") && (rest.size() == 4 || rest[4] == '/');
    bool component = i > 0 && s[i - 1] == '/' &&
                     (end == s.size() || s[end] == '/' || result_space) &&
                     below_run_place(s.substr(0, i - 1));
    if (component && token == id)
      out += "<id>";
    else if (component && token.size() > id.size() + 1 && token.substr(0, id.size()) == id &&
             token[id.size()] == '.' && digits_and_dots(token.substr(id.size() + 1)))
      out += "<id>.<n>";
    else
      out += token;
    i = end;
  }
  return out;
}

}  // namespace sealrun::receipt::diff
