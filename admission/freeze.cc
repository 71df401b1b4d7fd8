// SPDX-License-Identifier: Apache-2.0
// freeze_admission(): see freeze.h. Layering, lowest first: the draft, then each --set, then the
// command-line flags; then every section that names a path gets its pins computed from that path,
// replacing whatever pins the draft carried. The assembled JSON then goes through
// parse_admission_json(), so a --set can never produce a document that `run` would refuse.
#include "admission/freeze.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <set>

#include "admission/freeze_source_mtimes.h"
#include "admission/parse_view.h"
#include "admission/path_rules.h"
#include "admission/unreadable.h"
#include "admission/verify.h"
#include "core/atomic_write.h"
#include "core/bounded_file.h"
#include "core/strict_json.h"
#include "core/temp_dir.h"
#include "fingerprint/cached_tree.h"
#include "fingerprint/file_hash.h"
#include "fingerprint/image.h"
#include "fingerprint/sha256.h"
#include "fingerprint/source.h"
#include "fingerprint/tree.h"

namespace sealrun::admission {

using nlohmann::json;

Status apply_set(json* doc, std::string_view assignment) {
  size_t eq = assignment.find('=');
  if (eq == std::string_view::npos || eq == 0)
    return Error::make(
        fmt::format("--set {}: expected KEY=VALUE (e.g. limits.pids_max=512)", assignment));
  std::string_view key = assignment.substr(0, eq);
  std::string_view text = assignment.substr(eq + 1);
  json* node = doc;
  std::string walked;
  size_t start = 0;
  while (true) {
    size_t dot = key.find('.', start);
    std::string part(key.substr(start, dot == std::string_view::npos ? dot : dot - start));
    if (part.empty()) return Error::make(fmt::format("--set {}: empty component in the key", key));
    if (!node->is_object())
      return Error::make(fmt::format("--set {}: {} is not an object", key, walked));
    walked = json_path_join(walked, part);
    node = &(*node)[part];
    if (dot == std::string_view::npos) break;
    start = dot + 1;
    if (node->is_null()) *node = json::object();
  }
  auto parsed = parse_strict_json(text);
  *node = parsed.ok() ? std::move(parsed).value() : json(std::string(text));
  return ok_status();
}

namespace {

Result<std::string> real_path(const std::string& path, const char* what) {
  std::error_code ec;
  auto p = std::filesystem::canonical(path, ec);
  if (ec) return Error::with_errno(ec.value(), fmt::format("{} {}", what, path));
  return p.string();
}

std::string string_or(const json& obj, const char* key, const std::string& fallback) {
  if (obj.is_object() && obj.contains(key) && obj[key].is_string())
    return obj[key].get<std::string>();
  return fallback;
}

Result<json> source_pins(const std::string& given_path, std::string kind) {
  std::string path = SEALRUN_TRY(real_path(given_path, "source"));
  struct stat st = {};
  if (::stat(path.c_str(), &st) != 0) return Error::from_errno("source " + path);
  if (kind.empty()) {
    if (S_ISREG(st.st_mode))
      kind = "bundle";
    else if (::access((path + "/.git").c_str(), F_OK) == 0 ||
             (::access((path + "/HEAD").c_str(), F_OK) == 0 &&
              ::access((path + "/objects").c_str(), F_OK) == 0))  // a bare repository
      kind = "git";
    else
      kind = "tree";
  }
  json src = {{"kind", kind}, {"path", path}};
  Manifest manifest;
  if (kind == "tree") {
    manifest = SEALRUN_TRY_CTX(build_manifest(path), "manifest of source tree " + path);
  } else if (kind == "git" || kind == "bundle") {
    if (kind == "bundle") {
      auto digest = SEALRUN_TRY_CTX(hash_file(path), "source bundle");
      src["path_sha256"] = digest.sha256;
    }
    auto id = SEALRUN_TRY_CTX(read_git_identity(path, "HEAD"), "source " + path);
    src["commit"] = id.commit;
    src["tree"] = id.tree;
    auto tmp = SEALRUN_TRY_CTX(ScopedTempDir::create("sealrun-freeze"), "the source export");
    std::string dest = tmp.path() + "/src";
    SEALRUN_TRY_CTX(export_git_commit(path, id.commit, id.tree, dest),
                    "export of " + id.commit + " from " + path);
    manifest = SEALRUN_TRY_CTX(build_manifest(dest), "manifest of commit " + id.commit);
  } else {
    return Error::make(
        fmt::format("source.kind: expected \"git\", \"bundle\" or \"tree\", got \"{}\"", kind));
  }
  src["manifest"] = json::array();
  for (const ManifestEntry& e : manifest)
    src["manifest"].push_back({{"path", e.path}, {"bytes", e.bytes}, {"sha256", e.sha256}});
  src["manifest_sha256"] = manifest_digest(manifest);
  return src;
}

bool is_directory(const std::string& path) {
  struct stat st = {};
  return !path.empty() && ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Pins one --tree (or a draft's trees[] entry): refuses what is not a real directory to pin, and
// what would expose the state directory.
Result<json> tree_pin(
    const std::string& spec, const std::string& state_dir,
    const std::function<void(const std::string&, const HashProgress&)>& progress) {
  size_t eq = spec.find('=');
  std::string given = spec.substr(0, eq);
  std::string job = eq == std::string::npos ? "" : spec.substr(eq + 1);
  if (given.empty())
    return Error::make(fmt::format("--tree {}: expected HOST_DIR[=JOB_PATH]", spec));
  std::string host = std::filesystem::absolute(given).lexically_normal().string();
  if (host.size() > 1 && host.back() == '/') host.pop_back();
  if (auto why = tree_host_path_problem(host)) return Error::make("--tree " + given + ": " + *why);
  struct stat st = {};
  if (::lstat(host.c_str(), &st) != 0) return Error::from_errno("--tree " + given);
  std::string real = SEALRUN_TRY(real_path(host, "--tree"));
  if (S_ISLNK(st.st_mode) || real != host)
    return Error::make(fmt::format(
        "--tree {}: is (or goes through) a symlink, to {}; pin the real directory (a link in the "
        "job's view is made from what is pinned)",
        given, real));
  if (!S_ISDIR(st.st_mode))
    return Error::make(
        fmt::format("--tree {}: not a directory (pin a single file with "
                    "--host-tool)",
                    given));
  if (!state_dir.empty()) {
    std::string state = std::filesystem::absolute(state_dir).lexically_normal().string();
    std::error_code ec;
    auto state_real = std::filesystem::weakly_canonical(state, ec);
    if (!ec) state = state_real.string();
    if (state.size() > 1 && state.back() == '/') state.pop_back();
    if (paths_overlap(real, state))
      return Error::make(fmt::format(
          "--tree {}: overlaps the state directory {} (receipts, keys and caches are never part "
          "of a job's view); pin a directory beside it",
          given, state));
  }
  // Recorded in the digest cache as frozen (when there is one): the first run re-verifies by a
  // stat walk. A path in it this user may not read is said as `run` says it (unreadable.h).
  TreeOptions options;
  if (progress)
    options.on_progress = [&progress, label = "tree " + real](const HashProgress& p) {
      progress(label, p);
    };
  TreeSummary summary = SEALRUN_TRY(said_unreadable(
      (is_directory(state_dir)
           ? tree_digest_reporting({real, state_dir, std::nullopt, false, options}, {})
           : tree_digest(real, options))
          .context("--tree " + given),
      real));
  return json{
      {"host_path", real}, {"job_path", job.empty() ? real : job}, {"tree_sha256", summary.sha256}};
}

Result<json> assemble(const FreezeRequest& r) {
  json doc = json::object();
  if (!r.draft.empty()) {
    auto bytes = SEALRUN_TRY_CTX(read_bounded_file(AT_FDCWD, r.draft, kMaxAdmissionBytes),
                                 "draft " + r.draft);
    doc = SEALRUN_TRY_CTX(parse_strict_json(bytes), "draft " + r.draft);
    if (!doc.is_object()) return Error::make("draft " + r.draft + ": expected a JSON object");
  }
  if (!doc.contains("schema")) doc["schema"] = std::string(kSchema);
  SourceTimesChoice times;
  times.flag = r.source_mtimes;
  for (const std::string& s : r.sets) {
    // The one time (SOURCE_DATE_EPOCH and the source's mtime) is set in both places at once.
    size_t eq = s.find('=');
    if (eq != std::string::npos && is_source_epoch_key(std::string_view(s).substr(0, eq))) {
      json value = json::object();
      SEALRUN_TRY(apply_set(&value, "v" + s.substr(eq)));
      times.set_epoch = value["v"];
      continue;
    }
    SEALRUN_TRY(apply_set(&doc, s));
  }
  if (!r.argv.empty()) {
    if (!doc["command"].is_object()) doc["command"] = json::object();
    doc["command"]["argv"] = r.argv;
  }
  for (const std::string& e : r.env) {
    size_t eq = e.find('=');
    if (eq == std::string::npos || eq == 0)
      return Error::make(fmt::format("--env {}: expected NAME=VALUE", e));
    if (!doc["env"].is_object()) doc["env"] = json::object();
    doc["env"][e.substr(0, eq)] = e.substr(eq + 1);
  }

  // Source: a flag replaces the draft's path; the pins always come from the path.
  json& source = doc["source"];
  std::string source_path = !r.source.empty() ? r.source : string_or(source, "path", "");
  if (!source_path.empty()) {
    std::string kind = r.source.empty() ? string_or(source, "kind", "") : "";
    times.given_source = source;
    source = SEALRUN_TRY(source_pins(source_path, kind));
    SEALRUN_TRY(settle_source_times(&doc, times));
  } else {
    if (source.is_null()) doc.erase("source");
    if (times.set_epoch) doc["source_date_epoch"] = *times.set_epoch;
  }

  json& toolchain = doc["toolchain"];
  std::string root = !r.toolchain.empty() ? r.toolchain : string_or(toolchain, "root", "");
  if (r.toolchain_pin) {
    const ToolchainPin& pin = *r.toolchain_pin;
    toolchain = {
        {"root", pin.root}, {"tree_sha256", pin.tree_sha256}, {"mount_path", pin.mount_path}};
  } else if (!root.empty()) {
    root = SEALRUN_TRY(real_path(root, "toolchain"));
    TreeOptions options;
    options.progress = r.toolchain_progress;
    // Through the state directory's digest cache when there is one: a tree frozen again unchanged
    // costs a stat walk, and the first run finds it recorded.
    auto summary = SEALRUN_TRY(said_unreadable(
        (is_directory(r.state_dir)
             ? tree_digest_reporting({root, r.state_dir, std::nullopt, false, options}, {})
             : tree_digest(root, options))
            .context("toolchain " + root),
        root));
    std::string mount =
        !r.toolchain_mount.empty() ? r.toolchain_mount : string_or(toolchain, "mount_path", root);
    toolchain = {{"root", root}, {"tree_sha256", summary.sha256}, {"mount_path", mount}};
  } else if (toolchain.is_null()) {
    doc.erase("toolchain");
  }

  std::string archive =
      !r.image.empty() ? r.image : string_or(doc.value("image", json()), "archive", "");
  if (!archive.empty()) {
    archive = SEALRUN_TRY(real_path(archive, "image"));
    auto id = SEALRUN_TRY_CTX(inspect_image_archive(archive), "image " + archive);
    doc["image"] = {{"archive", archive},
                    {"archive_sha256", id.archive_sha256},
                    {"image_id", id.image_id},
                    {"diff_ids", id.diff_ids}};
  }

  std::vector<std::string> tools;
  if (doc.contains("host_tools") && doc["host_tools"].is_array())
    for (const json& t : doc["host_tools"]) tools.push_back(string_or(t, "path", ""));
  tools.insert(tools.end(), r.host_tools.begin(), r.host_tools.end());
  if (!tools.empty()) {
    json pinned = json::array();
    std::set<std::string> seen;
    for (const std::string& t : tools) {
      if (t.empty()) return Error::make("host_tools: an entry has no path");
      std::string path = SEALRUN_TRY(real_path(t, "host tool"));
      if (!seen.insert(path).second) continue;
      auto digest =
          SEALRUN_TRY(said_unreadable(hash_file(path).context("host tool " + path), path));
      pinned.push_back({{"path", path}, {"sha256", digest.sha256}});
    }
    doc["host_tools"] = std::move(pinned);
  }

  // Trees: pinned earlier (written as they are), or the draft's (by host_path and job_path) and
  // then the flags', each pinned from its path.
  std::vector<std::string> trees;
  if (doc.contains("trees") && doc["trees"].is_array())
    for (const json& t : doc["trees"]) {
      std::string host = string_or(t, "host_path", "");
      std::string job = string_or(t, "job_path", "");
      trees.push_back(job.empty() ? host : host + "=" + job);
    }
  trees.insert(trees.end(), r.trees.begin(), r.trees.end());
  if (!r.tree_pins.empty()) {
    doc["trees"] = json::array();
    for (const TreePin& t : r.tree_pins)
      doc["trees"].push_back(
          {{"host_path", t.host_path}, {"job_path", t.job_path}, {"tree_sha256", t.tree_sha256}});
  } else if (!trees.empty()) {
    json pinned = json::array();
    for (const std::string& t : trees)
      pinned.push_back(SEALRUN_TRY(tree_pin(t, r.state_dir, r.tree_progress)));
    doc["trees"] = std::move(pinned);
  }
  return doc;
}

}  // namespace

Result<std::string> freeze_to_bytes(const FreezeRequest& request) {
  json doc = SEALRUN_TRY(assemble(request));
  ParseOptions options;
  options.closure_follows = request.closure_follows;
  AdmissionDocument parsed =
      SEALRUN_TRY_CTX(parse_admission_json(doc, options), "the frozen admission");
  std::string bytes = canonical_admission_bytes(parsed);
  if (bytes.size() > kMaxAdmissionBytes)
    return Error::make(
        fmt::format("the frozen admission is {} bytes, over the {}-byte limit "
                    "(a very large source manifest?)",
                    bytes.size(), kMaxAdmissionBytes));
  // What we write must read back as itself; anything else is a bug here, caught before it ships.
  SEALRUN_TRY_CTX(parse_admission_bytes(bytes, options), "re-reading the frozen admission");
  return bytes;
}

Result<FreezeResult> freeze_admission(const FreezeRequest& request) {
  if (request.out.empty()) return Error::make("--out: a path for the admission is required");
  struct stat st = {};
  if (!request.force && ::lstat(request.out.c_str(), &st) == 0)
    return Error::make(fmt::format("{}: exists; pass --force to replace it", request.out));
  std::string bytes = SEALRUN_TRY(freeze_to_bytes(request));
  SEALRUN_TRY_CTX(write_file_atomic(request.out, bytes, 0644), "write " + request.out);
  FreezeResult result;
  result.path = request.out;
  result.sha256 = sha256_hex(bytes);
  ParseOptions options;
  options.closure_follows = request.closure_follows;
  result.document = SEALRUN_TRY(parse_admission_bytes(bytes, options));
  return result;
}

}  // namespace sealrun::admission
