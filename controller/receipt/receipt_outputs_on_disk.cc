// SPDX-License-Identifier: Apache-2.0
// `receipt verify --outputs DIR`: the outputs on disk against the receipt's complete list, walked
// the way the run collected them. The tree under DIR was shaped by the job, so it is read as a
// hostile tree: output_walk.h's walker goes by directory descriptor, opens every directory with
// O_NOFOLLOW and checks it by device and inode, and reads a symlink's target without following it
// (a link to ".", a loop or /etc/shadow is a target like any other). Each entry is rendered exactly
// as the receipt renders it (receipt_outputs.h: `_b64` forms for names and targets that are not
// UTF-8), and the two lists are compared record by record (output_compare.h), so a link target is
// compared byte for byte and every entry on disk that the list does not name — a symlink added
// afterwards that aliases a listed file too — is reported.
#include <fmt/format.h>

#include <filesystem>

#include "controller/receipt/output_compare.h"
#include "controller/receipt/output_walk.h"
#include "controller/receipt/receipt_checks.h"
#include "fingerprint/tree_json.h"

namespace sealrun::receipt {

using nlohmann::json;

namespace {

constexpr size_t kNamedProblems = 20;

// What one side of a change is, in raw bytes (the caller escapes the whole detail for display).
std::string what_is(const json& o) {
  std::string kind = o.contains("kind") ? member_text(o, "kind") : "file";
  if (kind == "symlink") {
    std::string target = member_text(o, "target");
    if (o.contains("target_b64") && o["target_b64"].is_string())
      if (auto raw = tree_json::base64_decode(o["target_b64"].get<std::string>())) target = *raw;
    return "symlink to " + target;
  }
  if (kind != "file") return kind;
  std::string digest = member_text(o, "sha256");
  std::string s = fmt::format("sha256 {}, {} bytes", digest.substr(0, 12), member_text(o, "size"));
  if (o.contains("hardlink_of")) s += ", hard link of " + member_text(o, "hardlink_of");
  return s;
}

std::string problem_text(const OutputChange& c) {
  switch (c.kind) {
    case OutputChange::Kind::kRemoved:
      return fmt::format("missing: {} ({})", c.name, what_is(c.a));
    case OutputChange::Kind::kAdded:
      return fmt::format("extra: {} ({})", c.name, what_is(c.b));
    case OutputChange::Kind::kChanged:
      return fmt::format("changed: {} ({} -> {})", c.name, what_is(c.a), what_is(c.b));
  }
  return c.name;
}

}  // namespace

std::vector<Check> check_outputs_on_disk(const std::string& receipt_path, const json& doc,
                                         const std::string& dir) {
  const char* kCheck = "outputs on disk";
  auto listed = load_output_list(receipt_path, doc, true);
  if (!listed) return {{kCheck, Verdict::kFail, listed.error().message()}};
  // DIR is the auditor's own path (it may be a symlink the auditor made); below it nothing is
  // followed.
  std::error_code ec;
  auto root = std::filesystem::canonical(dir, ec);
  if (ec) return {{kCheck, Verdict::kFail, fmt::format("--outputs {}: {}", dir, ec.message())}};
  auto walk = run::walk_outputs(root.string(), run::OutputLimits{}, run::StopCheck{});
  if (!walk) return {{kCheck, Verdict::kFail, walk.error().message()}};
  std::vector<json> on_disk;
  on_disk.reserve(walk->outputs.size());
  for (const auto& o : walk->outputs) on_disk.push_back(output_json(o));
  auto changes = compare_outputs(*listed, on_disk);
  if (changes.empty())
    return {{kCheck, Verdict::kPass,
             fmt::format("{} output(s) re-hashed under {}, no link followed; none missing, none "
                         "changed, none extra",
                         listed->size(), dir)}};
  std::string detail;
  for (size_t i = 0; i < changes.size() && i < kNamedProblems; ++i)
    detail += (detail.empty() ? "" : "; ") + problem_text(changes[i]);
  if (changes.size() > kNamedProblems)
    detail += fmt::format("; and {} more", changes.size() - kNamedProblems);
  return {{kCheck, Verdict::kFail, detail}};
}

}  // namespace sealrun::receipt
