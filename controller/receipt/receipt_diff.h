// SPDX-License-Identifier: Apache-2.0
// `receipt diff` as pure functions over two parsed receipts: did the two runs have the same
// inputs, the same environment and the same outputs? Every nested field is compared (digests at
// every depth included); arrays are matched by what identifies an element (a view entry by its
// job path, an input by its name, an output by its raw path ...), never by position; each field
// belongs to one of three classes, or is per-run noise (ids, times, pids, cache hits, paths that
// carry the run id) that is left out unless asked for. The table of classes and identities is in
// receipt_diff_rules.cc and docs/receipt.md ("Comparing two receipts"); this file owns the walk
// and the two renderings (for a person, escaped; for a script, plain JSON values).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace sealrun::receipt::diff {

enum class Class { kInputs, kEnvironment, kOutputs, kPerRun };
std::string_view class_name(Class c);  // "inputs", "environment", "outputs", "per-run"

enum class Change { kChanged, kAdded, kRemoved };  // added: only in B; removed: only in A
std::string_view change_name(Change c);            // "changed", "added", "removed"

struct Difference {
  std::string path;     // "admission.inputs[source].digest.sha256"; raw bytes of the keys
  std::string pattern;  // the path with every element as "[]": "admission.inputs[].digest.sha256"
  std::string key;      // the last element's identity (raw bytes), "" when not below an array
  Change change = Change::kChanged;
  Class cls = Class::kOutputs;
  nlohmann::json a, b;  // the values; null on the side where it is absent (see `change`)
};

struct Result {
  std::vector<Difference> differences;  // in receipt order; per-run ones only with `all`
  size_t per_run_left_out = 0;          // per-run differences not listed (without `all`)
  bool same_inputs = true, same_environment = true, same_outputs = true;
  bool same() const { return same_inputs && same_environment && same_outputs; }
};

// Compares receipt `a` with receipt `b`. The outputs compared are each receipt's `outputs`
// member: the caller puts the complete list (outputs.jsonl) there when the receipt lists only
// part of it. A string that differs only by the run id where it names a run-specific place
// (mask_run_id) is a per-run difference. With `all`, per-run differences are listed (class
// per-run); they never change a verdict.
Result compare(const nlohmann::json& a, const nlohmann::json& b, bool all);

// "same inputs, different environment, same outputs".
std::string verdict_line(const Result& r);

// For a person: the verdict line, then the differences grouped by class, every key and value
// escaped (display_text.h); outputs are named as `sealrun rebuild` names them
// ("output changed: NAME (...)").
std::string to_text(const Result& r, bool all);

// For a script: {same, same_inputs, same_environment, same_outputs, verdict, per_run_left_out,
// differences: [{path, class, change, a, b}]} with a and b the receipts' own JSON values.
nlohmann::json to_json(const Result& r);

// --- the rules (receipt_diff_rules.cc) ---

// The class of a field, from its pattern ("view[].pin"): the longest rule that is a prefix of it
// at a boundary. `element` is the element of the outermost array the field is in (a view entry's
// kind decides whether it is an input or the environment); null when not in one.
Class class_of(std::string_view pattern, const nlohmann::json& element);

// Every top-level receipt field with a class of its own (for the docs' table and the test that
// every field the writer knows is classified).
struct TopLevelClass {
  std::string_view field;
  Class cls;
};
const std::vector<TopLevelClass>& top_level_classes();

// How the elements of the array at `pattern` are matched.
enum class Match {
  kWhole,       // ordered, compared as one value (argv)
  kByKey,       // by an identity member of each object (`key_member`), the rest compared inside
  kByValue,     // scalars as a multiset: what is only in A, what is only in B
  kByPosition,  // by index (objects without an identity, e.g. census samples)
  kOutputs,     // outputs: by raw path (path_b64 when present), each record compared whole
};
struct ArrayRule {
  Match match = Match::kByPosition;
  std::string_view key_member;  // for kByKey
};
// The rule for `pattern`; arrays without one are matched by value when every element is a scalar,
// else by position.
ArrayRule array_rule(std::string_view pattern, const nlohmann::json& a, const nlohmann::json& b);

// `s` with the run id `id` masked where it names a run-specific place: a path component right
// below results/, owned/, exports/ or refusals/ that is the id, or the id followed by
// ".<pid>.<n>" (results/ID/out, exports/ID.123.456/source). Nothing else is touched.
std::string mask_run_id(std::string_view s, std::string_view id);

}  // namespace sealrun::receipt::diff
