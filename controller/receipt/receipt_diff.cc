// SPDX-License-Identifier: Apache-2.0
// The walk of `receipt diff` and its two renderings: see receipt_diff.h. The receipts are
// untrusted input: values are compared as JSON (never re-parsed from text), keys and values that
// reach a terminal are escaped (display_text.h), and nothing here throws on a wrong type.
#include "controller/receipt/receipt_diff.h"

#include <fmt/format.h>

#include <map>

#include "controller/common/display_text.h"
#include "controller/receipt/output_compare.h"
#include "fingerprint/tree_json.h"

namespace sealrun::receipt::diff {

using nlohmann::json;

namespace {

std::string id_of(const json& r) {
  return r.is_object() && r.contains("id") && r["id"].is_string() ? r["id"].get<std::string>() : "";
}

// An output's identity: the raw bytes of its name (path_b64 when the name is not UTF-8).
std::string output_name(const json& o) {
  if (o.is_object() && o.contains("path_b64") && o["path_b64"].is_string())
    if (auto raw = tree_json::base64_decode(o["path_b64"].get<std::string>())) return *raw;
  return o.is_object() && o.contains("path") && o["path"].is_string() ? o["path"].get<std::string>()
                                                                      : "";
}

// The identity of each element under `rule`, in order; a second element with the same identity
// is "<key>#2", so duplicates are matched in order rather than lost.
std::vector<std::string> identities(const json& arr, const ArrayRule& rule) {
  std::vector<std::string> out;
  std::map<std::string, int> seen;
  for (const auto& e : arr) {
    std::string key;
    if (rule.match == Match::kOutputs)
      key = output_name(e);
    else if (rule.match == Match::kByValue)
      key = e.is_string() ? e.get<std::string>() : e.dump();
    else if (e.is_object() && e.contains(rule.key_member))
      key = e[std::string(rule.key_member)].is_string()
                ? e[std::string(rule.key_member)].get<std::string>()
                : e[std::string(rule.key_member)].dump();
    else
      key = "?";
    int n = ++seen[key];
    out.push_back(n == 1 ? key : fmt::format("{}#{}", key, n));
  }
  return out;
}

class Walker {
 public:
  Walker(const json& a, const json& b, bool all) : all_(all), id_a_(id_of(a)), id_b_(id_of(b)) {}

  void walk(const json* a, const json* b, const std::string& path, const std::string& pattern,
            const std::string& key, const json& element) {
    if (a == nullptr || b == nullptr) {
      add(a == nullptr ? Change::kAdded : Change::kRemoved, a, b, path, pattern, key, element);
      return;
    }
    if (a->is_object() && b->is_object()) {
      std::map<std::string, int> keys;  // sorted, so the order does not depend on the writer's
      for (auto it = a->begin(); it != a->end(); ++it) keys[it.key()] |= 1;
      for (auto it = b->begin(); it != b->end(); ++it) keys[it.key()] |= 2;
      for (const auto& [k, sides] : keys) {
        std::string p = path.empty() ? k : path + "." + k;
        std::string pat = pattern.empty() ? k : pattern + "." + k;
        walk(sides & 1 ? &*a->find(k) : nullptr, sides & 2 ? &*b->find(k) : nullptr, p, pat, key,
             element);
      }
      return;
    }
    if (a->is_array() && b->is_array()) return walk_array(*a, *b, path, pattern, element);
    // Strings are compared with each run's id masked where it names the run's own places
    // (results/<id>/out): a value that differs only there is per-run (listed with --all, never a
    // verdict), and one that names the other run's place differs even when the bytes agree.
    bool masked_equal = masked(*a, id_a_) == masked(*b, id_b_);
    if (*a == *b && masked_equal) return;
    add(Change::kChanged, a, b, path, pattern, key, element, masked_equal);
  }

  Result take() { return std::move(result_); }

 private:
  void walk_array(const json& a, const json& b, const std::string& path, const std::string& pattern,
                  const json& element) {
    ArrayRule rule = array_rule(pattern, a, b);
    std::string pat = pattern + "[]";
    if (rule.match == Match::kWhole) {
      if (a != b) add(Change::kChanged, &a, &b, path, pattern, "", element);
      return;
    }
    if (rule.match == Match::kByPosition) {
      for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
        const json* ea = i < a.size() ? &a[i] : nullptr;
        const json* eb = i < b.size() ? &b[i] : nullptr;
        std::string k = std::to_string(i);
        walk(ea, eb, fmt::format("{}[{}]", path, i), pat, k, outer(element, ea, eb));
      }
      return;
    }
    auto ka = identities(a, rule);
    auto kb = identities(b, rule);
    std::map<std::string, size_t> in_b;
    for (size_t i = 0; i < kb.size(); ++i) in_b[kb[i]] = i;
    std::map<std::string, size_t> in_a;
    for (size_t i = 0; i < ka.size(); ++i) in_a[ka[i]] = i;
    // A's order, then what only B has, in B's order: a view stays in mount order.
    auto visit = [&](const json* ea, const json* eb, const std::string& k) {
      std::string p = fmt::format("{}[{}]", path, k);
      const json& el = outer(element, ea, eb);
      if (rule.match == Match::kOutputs) {  // whole records, as `rebuild` compares them
        if (ea == nullptr || eb == nullptr || *ea != *eb)
          add(ea == nullptr   ? Change::kAdded
              : eb == nullptr ? Change::kRemoved
                              : Change::kChanged,
              ea, eb, p, pat, k, el);
      } else if (rule.match == Match::kByValue) {
        if (ea == nullptr || eb == nullptr)
          add(ea == nullptr ? Change::kAdded : Change::kRemoved, ea, eb, p, pat, k, el);
      } else {
        walk(ea, eb, p, pat, k, el);
      }
    };
    for (size_t i = 0; i < ka.size(); ++i) {
      auto it = in_b.find(ka[i]);
      visit(&a[i], it == in_b.end() ? nullptr : &b[it->second], ka[i]);
    }
    for (size_t i = 0; i < kb.size(); ++i)
      if (!in_a.count(kb[i])) visit(nullptr, &b[i], kb[i]);
  }

  // The element of the outermost array a field is in (what class_of() looks at).
  static const json& outer(const json& element, const json* ea, const json* eb) {
    if (!element.is_null()) return element;
    if (ea != nullptr) return *ea;
    return eb != nullptr ? *eb : element;  // visit() never passes two nulls
  }

  static json masked(const json& v, const std::string& id) {
    return v.is_string() ? json(mask_run_id(v.get_ref<const std::string&>(), id)) : v;
  }

  void add(Change change, const json* a, const json* b, const std::string& path,
           const std::string& pattern, const std::string& key, const json& element,
           bool per_run = false) {
    Class cls = per_run ? Class::kPerRun : class_of(pattern, element);
    switch (cls) {
      case Class::kInputs:
        result_.same_inputs = false;
        break;
      case Class::kEnvironment:
        result_.same_environment = false;
        break;
      case Class::kOutputs:
        result_.same_outputs = false;
        break;
      case Class::kPerRun:
        if (!all_) {
          ++result_.per_run_left_out;
          return;
        }
        break;
    }
    result_.differences.push_back(
        {path, pattern, key, change, cls, a != nullptr ? *a : json(), b != nullptr ? *b : json()});
  }

  bool all_;
  std::string id_a_, id_b_;
  Result result_;
};

std::string side(std::string_view same, bool is_same, std::string_view what) {
  return fmt::format("{} {}", is_same ? same : "different", what);
}

// A JSON value for a terminal: compact, C0 controls escaped by JSON, the rest by json_for_terminal.
std::string value_text(const json& v) {
  return display::json_for_terminal(v.dump(-1, ' ', false, json::error_handler_t::replace));
}

std::string difference_text(const Difference& d) {
  if (d.pattern == "outputs[]") {
    OutputChange c;
    c.kind = d.change == Change::kAdded     ? OutputChange::Kind::kAdded
             : d.change == Change::kRemoved ? OutputChange::Kind::kRemoved
                                            : OutputChange::Kind::kChanged;
    c.name = d.key;
    c.a = d.a;
    c.b = d.b;
    return fmt::format("  output {}\n", change_text(c));
  }
  std::string path = display::escape(d.path);
  switch (d.change) {
    case Change::kAdded:
      return fmt::format("  {} (only in B)\n    + {}\n", path, value_text(d.b));
    case Change::kRemoved:
      return fmt::format("  {} (only in A)\n    - {}\n", path, value_text(d.a));
    case Change::kChanged:
      break;
  }
  return fmt::format("  {}\n    - {}\n    + {}\n", path, value_text(d.a), value_text(d.b));
}

}  // namespace

std::string_view class_name(Class c) {
  switch (c) {
    case Class::kInputs:
      return "inputs";
    case Class::kEnvironment:
      return "environment";
    case Class::kOutputs:
      return "outputs";
    case Class::kPerRun:
      return "per-run";
  }
  return "outputs";
}

std::string_view change_name(Change c) {
  switch (c) {
    case Change::kChanged:
      return "changed";
    case Change::kAdded:
      return "added";
    case Change::kRemoved:
      return "removed";
  }
  return "changed";
}

Result compare(const json& a, const json& b, bool all) {
  Walker w(a, b, all);
  w.walk(&a, &b, "", "", "", json());
  return w.take();
}

std::string verdict_line(const Result& r) {
  return fmt::format("{}, {}, {}", side("same", r.same_inputs, "inputs"),
                     side("same", r.same_environment, "environment"),
                     side("same", r.same_outputs, "outputs"));
}

std::string to_text(const Result& r, bool all) {
  std::string out = verdict_line(r) + "\n";
  for (Class c : {Class::kInputs, Class::kEnvironment, Class::kOutputs, Class::kPerRun}) {
    std::string part;
    size_t n = 0;
    for (const auto& d : r.differences)
      if (d.cls == c) {
        part += difference_text(d);
        ++n;
      }
    if (n == 0) continue;
    out +=
        c == Class::kPerRun
            ? fmt::format("per-run ({}, differ in every run; no bearing on the verdict):\n", n)
            : fmt::format("{} ({} {}):\n", class_name(c), n, n == 1 ? "difference" : "differences");
    out += part;
  }
  if (!all && r.per_run_left_out > 0)
    out += fmt::format(
        "({} per-run {} left out: ids, times, pids, cache hits, the run's own paths; --all "
        "lists them)\n",
        r.per_run_left_out, r.per_run_left_out == 1 ? "difference" : "differences");
  return out;
}

json to_json(const Result& r) {
  json diffs = json::array();
  for (const auto& d : r.differences) {
    json item = {{"path", d.path},
                 {"class", class_name(d.cls)},
                 {"change", change_name(d.change)},
                 {"a", d.a},
                 {"b", d.b}};
    if (!tree_json::is_valid_utf8(d.path)) item["path"] = display::escape(d.path);
    // An output whose name is not UTF-8 is named by its bytes too, as `rebuild --json` does.
    if (d.pattern == "outputs[]" && !tree_json::is_valid_utf8(d.key))
      item["path_b64"] = tree_json::base64_encode(d.key);
    diffs.push_back(std::move(item));
  }
  return {{"same", r.same()},
          {"same_inputs", r.same_inputs},
          {"same_environment", r.same_environment},
          {"same_outputs", r.same_outputs},
          {"verdict", verdict_line(r)},
          {"per_run_left_out", r.per_run_left_out},
          {"differences", std::move(diffs)}};
}

}  // namespace sealrun::receipt::diff
