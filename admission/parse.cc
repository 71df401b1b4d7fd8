// SPDX-License-Identifier: Apache-2.0
// parse_admission_json(): the schema check of an admission, field by field. It never stops at the
// first problem: a person fixing a draft wants every complaint at once, each prefixed with the
// JSON path of the field ("limits.memory_max_bytes: expected an integer, got a string"). Paths
// must be absolute and normal (no ".", "..", "//" or trailing "/"), digests lower-case hex, and
// nothing the schema does not name is accepted, so a typo can never silently mean a default.
#include <fmt/format.h>

#include <algorithm>
#include <regex>
#include <set>

#include "admission/document.h"
#include "admission/json_fields.h"
#include "admission/parse_source_mtimes.h"
#include "admission/parse_view.h"
#include "admission/path_rules.h"
#include "core/hex.h"
#include "core/strict_json.h"

namespace sealrun::admission {

using nlohmann::json;

namespace {

constexpr size_t kMaxErrors = 20;
constexpr size_t kMaxArgv = 4096;
constexpr size_t kMaxEnv = 256;
constexpr size_t kMaxHostTools = 64;
constexpr size_t kMaxReferenceValue = 2048;
constexpr size_t kMaxReferencePattern = 256;
constexpr uint64_t kMaxLimit = 1ull << 62;
constexpr const char* kNoToolchain =
    "missing: the job needs its programs from somewhere; give --toolchain DIR, or --learn to pin "
    "what the command uses (an admission without a toolchain needs a learned closure in "
    "host_files, an image, or pinned trees)";

class Parser {
 public:
  explicit Parser(const ParseOptions& options) : options_(options) {}

  AdmissionDocument run(const json& root) {
    AdmissionDocument doc;
    if (!root.is_object()) {
      error("document", "expected an object, got " + json_type_of(root));
      return doc;
    }
    keys(root, "", {"schema", "command", "source"},
         {"toolchain", "source_date_epoch", "env", "image", "host_tools", "trees", "host_files",
          "host_links", "host_dirs", "mounts", "limits", "containment", "expires_at", "reference"});
    if (root.contains("schema")) {
      std::string schema;
      if (string(root["schema"], "schema", &schema) && schema != kSchema)
        error("schema",
              fmt::format("unsupported schema \"{}\"; this sealrun reads \"{}\"", schema, kSchema));
    }
    if (root.contains("command")) command(root["command"], &doc.command);
    if (root.contains("source_date_epoch")) {
      uint64_t v = 0;
      if (integer(root["source_date_epoch"], "source_date_epoch", 0, kMaxSourceDateEpoch, &v))
        doc.source_date_epoch = static_cast<int64_t>(v);
    }
    if (root.contains("env")) env(root["env"], &doc.env);
    if (root.contains("source")) source(root["source"], &doc.source);
    if (root.contains("toolchain")) toolchain(root["toolchain"], &doc.toolchain.emplace());
    if (root.contains("image")) image(root["image"], &doc.image.emplace());
    if (root.contains("host_tools")) host_tools(root["host_tools"], &doc.host_tools);
    ProblemSink problem = [this](const std::string& path, const std::string& what) {
      error(path, what);
    };
    parse_source_mtimes(root, &doc, problem);  // after source and source_date_epoch
    if (root.contains("trees")) parse_trees(root["trees"], &doc.trees, problem);
    if (root.contains("host_files")) parse_host_files(root["host_files"], &doc.host_files, problem);
    if (root.contains("host_links")) parse_host_links(root["host_links"], &doc.host_links, problem);
    if (root.contains("host_dirs")) parse_host_dirs(root["host_dirs"], &doc.host_dirs, problem);
    if (root.contains("mounts")) mounts(root["mounts"], &doc.mounts);
    if (root.contains("limits")) limits(root["limits"], &doc.limits);
    if (root.contains("containment")) containment(root["containment"], &doc.containment);
    if (root.contains("expires_at")) {
      std::string text;
      if (string(root["expires_at"], "expires_at", &text)) {
        auto when = parse_rfc3339(text);
        if (!when)
          error("expires_at", "expected an RFC 3339 time such as \"2026-12-31T23:59:59Z\"");
        doc.expires_at = text;
        doc.expires_at_epoch = when;
      }
    }
    if (root.contains("reference")) reference(root["reference"], &doc.reference.emplace());
    if (doc.toolchain && doc.toolchain->mount_path.empty())
      doc.toolchain->mount_path = doc.toolchain->root;
    if (!doc.toolchain && !toolchain_may_be_absent(doc, options_)) error("toolchain", kNoToolchain);
    cross_checks(doc);
    check_view_places(doc, problem);
    return doc;
  }

  const std::vector<std::string>& errors() const { return errors_; }
  size_t dropped() const { return dropped_; }

 private:
  void error(const std::string& path, const std::string& what) {
    if (errors_.size() < kMaxErrors)
      errors_.push_back(fmt::format("{}: {}", printable_text(path.empty() ? "document" : path),
                                    printable_text(what)));
    else
      ++dropped_;
  }

  // The typed readers (json_fields.h), reporting through error().
  bool keys(const json& obj, const std::string& path, std::initializer_list<const char*> required,
            std::initializer_list<const char*> optional) {
    return fields_.keys(obj, path, required, optional);
  }
  bool object(const json& v, const std::string& path) { return fields_.object(v, path); }
  bool array(const json& v, const std::string& path, size_t max) {
    return fields_.array(v, path, max);
  }
  bool string(const json& v, const std::string& path, std::string* out) {
    return fields_.string(v, path, out);
  }
  bool abs_path(const json& v, const std::string& path, std::string* out) {
    return fields_.abs_path(v, path, out);
  }
  bool sha256(const json& v, const std::string& path, std::string* out) {
    return fields_.sha256(v, path, out);
  }

  bool integer(const json& v, const std::string& path, uint64_t min, uint64_t max, uint64_t* out) {
    return fields_.integer(v, path, min, max, out);
  }

  bool prefixed_digest(const json& v, const std::string& path, std::string* out) {
    if (!string(v, path, out)) return false;
    if (out->rfind("sha256:", 0) != 0 || !is_sha256_hex(std::string_view(*out).substr(7))) {
      error(path, "expected \"sha256:\" followed by 64 lower-case hex digits");
      return false;
    }
    return true;
  }

  bool git_oid(const json& v, const std::string& path, std::string* out) {
    if (!string(v, path, out)) return false;
    bool good = out->size() == 40 && std::all_of(out->begin(), out->end(), [](char c) {
                  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
                });
    if (!good) error(path, "expected a git object id as 40 lower-case hex digits");
    return good;
  }

  void command(const json& v, Command* out) {
    if (!object(v, "command")) return;
    keys(v, "command", {"argv"}, {"cwd"});
    if (v.contains("argv") && array(v["argv"], "command.argv", kMaxArgv)) {
      if (v["argv"].empty()) error("command.argv", "must name a program (it is empty)");
      for (size_t i = 0; i < v["argv"].size(); ++i) {
        std::string arg;
        std::string p = json_path_index("command.argv", i);
        if (string(v["argv"][i], p, &arg)) {
          if (i == 0 && arg.empty()) error(p, "the program name is empty");
          out->argv.push_back(std::move(arg));
        }
      }
    }
    if (v.contains("cwd")) abs_path(v["cwd"], "command.cwd", &out->cwd);
  }

  void env(const json& v, std::map<std::string, std::string>* out) {
    if (!object(v, "env")) return;
    if (v.size() > kMaxEnv)
      error("env", fmt::format("has {} variables, more than the limit of {}", v.size(), kMaxEnv));
    for (const auto& [name, value] : v.items()) {
      std::string p = json_path_join("env", name);
      if (!is_env_name(name)) {
        error(p, "not a variable name (letters, digits and '_', not starting with a digit)");
        continue;
      }
      if (name == "SOURCE_DATE_EPOCH") {
        error(p, "set by source_date_epoch; do not repeat it in env");
        continue;
      }
      std::string s;
      if (string(value, p, &s)) (*out)[name] = std::move(s);
    }
  }

  void source(const json& v, SourcePin* out) {
    if (!object(v, "source")) return;
    std::string kind;
    if (!v.contains("kind")) {
      error("source.kind", "missing (required): one of \"git\", \"bundle\", \"tree\"");
      return;
    }
    if (!string(v["kind"], "source.kind", &kind)) return;
    if (kind == "git") {
      out->kind = SourceKind::kGit;
      keys(v, "source", {"kind", "path", "commit", "tree", "manifest", "manifest_sha256"},
           {"mtimes", "mtime_epoch", "mtimes_sha256", "mtimes_list"});
    } else if (kind == "bundle") {
      out->kind = SourceKind::kBundle;
      keys(v, "source",
           {"kind", "path", "path_sha256", "commit", "tree", "manifest", "manifest_sha256"},
           {"mtimes", "mtime_epoch", "mtimes_sha256", "mtimes_list"});
    } else if (kind == "tree") {
      out->kind = SourceKind::kTree;
      keys(v, "source", {"kind", "path", "manifest", "manifest_sha256"},
           {"mtimes", "mtime_epoch", "mtimes_sha256", "mtimes_list"});
    } else {
      error("source.kind",
            fmt::format("expected \"git\", \"bundle\" or \"tree\", got \"{}\"", kind));
      return;
    }
    if (v.contains("path")) abs_path(v["path"], "source.path", &out->path);
    if (v.contains("path_sha256") && out->kind == SourceKind::kBundle)
      sha256(v["path_sha256"], "source.path_sha256", &out->path_sha256);
    if (v.contains("commit") && out->kind != SourceKind::kTree)
      git_oid(v["commit"], "source.commit", &out->commit);
    if (v.contains("tree") && out->kind != SourceKind::kTree)
      git_oid(v["tree"], "source.tree", &out->tree);
    if (v.contains("manifest_sha256"))
      sha256(v["manifest_sha256"], "source.manifest_sha256", &out->manifest_sha256);
    if (v.contains("manifest")) manifest(v["manifest"], &out->manifest);
  }

  void manifest(const json& v, Manifest* out) {
    if (!array(v, "source.manifest", 1000000)) return;
    for (size_t i = 0; i < v.size(); ++i) {
      std::string p = json_path_index("source.manifest", i);
      const json& e = v[i];
      if (!object(e, p) || !keys(e, p, {"path", "bytes", "sha256"}, {})) continue;
      ManifestEntry entry;
      bool good = string(e["path"], p + ".path", &entry.path);
      if (good) {
        if (auto why = relative_path_problem(entry.path)) {
          error(p + ".path", *why);
          good = false;
        } else if (!out->empty() && !(out->back().path < entry.path)) {
          error(p + ".path", fmt::format("\"{}\" is out of order or repeated (entries are sorted "
                                         "by raw path bytes, each path once)",
                                         entry.path));
          good = false;
        }
      }
      good = integer(e["bytes"], p + ".bytes", 0, kMaxLimit, &entry.bytes) && good;
      good = sha256(e["sha256"], p + ".sha256", &entry.sha256) && good;
      if (good) out->push_back(std::move(entry));
    }
  }

  void toolchain(const json& v, ToolchainPin* out) {
    if (!object(v, "toolchain")) return;
    keys(v, "toolchain", {"root", "tree_sha256"}, {"mount_path"});
    if (v.contains("root")) abs_path(v["root"], "toolchain.root", &out->root);
    if (v.contains("tree_sha256"))
      sha256(v["tree_sha256"], "toolchain.tree_sha256", &out->tree_sha256);
    if (v.contains("mount_path"))
      abs_path(v["mount_path"], "toolchain.mount_path", &out->mount_path);
  }

  void image(const json& v, ImagePin* out) {
    if (!object(v, "image")) return;
    keys(v, "image", {"archive", "archive_sha256", "image_id", "diff_ids"}, {});
    if (v.contains("archive")) abs_path(v["archive"], "image.archive", &out->archive);
    if (v.contains("archive_sha256"))
      sha256(v["archive_sha256"], "image.archive_sha256", &out->archive_sha256);
    if (v.contains("image_id")) prefixed_digest(v["image_id"], "image.image_id", &out->image_id);
    if (v.contains("diff_ids") && array(v["diff_ids"], "image.diff_ids", 1024)) {
      for (size_t i = 0; i < v["diff_ids"].size(); ++i) {
        std::string d;
        if (prefixed_digest(v["diff_ids"][i], json_path_index("image.diff_ids", i), &d))
          out->diff_ids.push_back(std::move(d));
      }
    }
  }

  void host_tools(const json& v, std::vector<HostToolPin>* out) {
    if (!array(v, "host_tools", kMaxHostTools)) return;
    std::set<std::string> seen;
    for (size_t i = 0; i < v.size(); ++i) {
      std::string p = json_path_index("host_tools", i);
      if (!object(v[i], p) || !keys(v[i], p, {"path", "sha256"}, {})) continue;
      HostToolPin tool;
      bool good = abs_path(v[i]["path"], p + ".path", &tool.path);
      good = sha256(v[i]["sha256"], p + ".sha256", &tool.sha256) && good;
      if (good && !seen.insert(tool.path).second) {
        error(p + ".path", fmt::format("\"{}\" is listed twice", tool.path));
        good = false;
      }
      if (good) out->push_back(std::move(tool));
    }
  }

  void mounts(const json& v, Mounts* out) {
    if (!object(v, "mounts")) return;
    keys(v, "mounts", {},
         {"source", "output", "scratch", "tmp", "source_writable", "outputs_from"});
    if (v.contains("source")) abs_path(v["source"], "mounts.source", &out->source);
    if (v.contains("output")) abs_path(v["output"], "mounts.output", &out->output);
    if (v.contains("scratch")) abs_path(v["scratch"], "mounts.scratch", &out->scratch);
    if (v.contains("tmp")) abs_path(v["tmp"], "mounts.tmp", &out->tmp);
    if (v.contains("source_writable")) {
      if (v["source_writable"].is_boolean())
        out->source_writable = v["source_writable"].get<bool>();
      else
        error("mounts.source_writable",
              "expected a boolean, got " + json_type_of(v["source_writable"]));
    }
    std::string from;
    if (v.contains("outputs_from") && string(v["outputs_from"], "mounts.outputs_from", &from)) {
      if (from == "output")
        out->outputs_from = OutputsFrom::kOutput;
      else if (from == "source")
        out->outputs_from = OutputsFrom::kSource;
      else
        error("mounts.outputs_from",
              fmt::format("expected \"output\" or \"source\", got \"{}\"", from));
    }
    if (out->outputs_from == OutputsFrom::kSource && !out->source_writable)
      error("mounts.outputs_from",
            "\"source\" needs mounts.source_writable: true (a read-only source cannot change)");
  }

  void limits(const json& v, Limits* out) {
    if (!object(v, "limits")) return;
    struct Key {
      const char* name;
      uint64_t* field;
      uint64_t min;
      uint64_t max;
    };
    const Key table[] = {
        {"memory_high_bytes", &out->memory_high_bytes, kMiBytes, kMaxLimit},
        {"memory_max_bytes", &out->memory_max_bytes, kMiBytes, kMaxLimit},
        {"swap_max_bytes", &out->swap_max_bytes, 0, kMaxLimit},
        {"pids_max", &out->pids_max, 1, 4194304},
        {"wall_clock_s", &out->wall_clock_s, 1, 31 * 24 * 3600},
        {"outer_s", &out->outer_s, 2, 31 * 24 * 3600},
        {"owned_max_bytes", &out->owned_max_bytes, 1, kMaxLimit},
        {"owned_max_inodes", &out->owned_max_inodes, 1024, kMaxLimit},
        {"result_max_bytes", &out->result_max_bytes, 1, kMaxLimit},
        {"result_max_inodes", &out->result_max_inodes, 1024, kMaxLimit},
        {"free_min_bytes", &out->free_min_bytes, 0, kMaxLimit},
        {"ceiling_bytes", &out->ceiling_bytes, 1, kMaxLimit},
        {"reserve_bytes", &out->reserve_bytes, 0, kMaxLimit},
        {"census_interval_ms", &out->census_interval_ms, 100, 600000},
        {"receipt_max_bytes", &out->receipt_max_bytes, 64 * 1024, kMaxAdmissionBytes},
    };
    for (const auto& [k, value] : v.items()) {
      const Key* key = nullptr;
      for (const Key& t : table)
        if (k == t.name) key = &t;
      std::string p = json_path_join("limits", k);
      if (!key) {
        error(p, "unknown key (not part of " + std::string(kSchema) + ")");
        continue;
      }
      integer(value, p, key->min, key->max, key->field);
    }
  }

  void containment(const json& v, Containment* out) {
    if (!object(v, "containment")) return;
    keys(v, "containment", {}, {"required", "network", "mechanism"});
    if (v.contains("required") && array(v["required"], "containment.required", 64)) {
      DimensionSet set;
      for (size_t i = 0; i < v["required"].size(); ++i) {
        std::string p = json_path_index("containment.required", i);
        std::string name;
        if (!string(v["required"][i], p, &name)) continue;
        auto d = parse_dimension(name);
        if (!d) {
          error(p, fmt::format("unknown dimension \"{}\"; known: {}", name,
                               DimensionSet::all().joined()));
        } else if (set.contains(*d)) {
          error(p, fmt::format("\"{}\" is listed twice", name));
        } else {
          set.insert(*d);
        }
      }
      out->required = set;
    }
    if (v.contains("network") && string(v["network"], "containment.network", &out->network) &&
        out->network != "none")
      error("containment.network", "only \"none\" is admitted (jobs get no network)");
    if (v.contains("mechanism")) {
      std::string m;
      if (string(v["mechanism"], "containment.mechanism", &m)) {
        if (m == "auto")
          out->mechanism = std::nullopt;
        else if (auto kind = parse_mechanism_kind(m))
          out->mechanism = *kind;
        else
          error("containment.mechanism", fmt::format("expected \"auto\" or one of {}, got \"{}\"",
                                                     mechanism_kind_names(), m));
      }
    }
  }

  void reference(const json& v, Reference* out) {
    if (!object(v, "reference") || !keys(v, "reference", {"value", "pattern"}, {})) return;
    if (!string(v["value"], "reference.value", &out->value) ||
        !string(v["pattern"], "reference.pattern", &out->pattern))
      return;
    if (out->value.size() > kMaxReferenceValue)
      return error("reference.value", fmt::format("longer than {} bytes", kMaxReferenceValue));
    if (out->pattern.size() > kMaxReferencePattern)
      return error("reference.pattern", fmt::format("longer than {} bytes", kMaxReferencePattern));
    try {
      // libstdc++'s default regex executor backtracks recursively: exponential time on patterns
      // such as (a*)*b and deep recursion on long input. __polynomial selects its breadth-first
      // executor (and refuses back-references), which is polynomial in both. With the lengths
      // bounded above, matching is cheap whatever the document says.
      auto flags = std::regex::ECMAScript;
#ifdef __GLIBCXX__
      flags |= std::regex_constants::__polynomial;
#endif
      std::regex re(out->pattern, flags);
      if (!std::regex_match(out->value, re))
        error("reference.value", fmt::format("\"{}\" does not match reference.pattern \"{}\"",
                                             out->value, out->pattern));
    } catch (const std::regex_error& e) {
      error("reference.pattern", fmt::format("not a usable regular expression: {}", e.what()));
    }
  }

  void cross_checks(const AdmissionDocument& doc) {
    const Limits& l = doc.limits;
    if (l.memory_high_bytes > l.memory_max_bytes)
      error("limits.memory_high_bytes", fmt::format("{} is above limits.memory_max_bytes ({})",
                                                    l.memory_high_bytes, l.memory_max_bytes));
    if (l.wall_clock_s >= l.outer_s)
      error("limits.wall_clock_s", fmt::format("{} s leaves no time for verification and cleanup "
                                               "within limits.outer_s ({} s)",
                                               l.wall_clock_s, l.outer_s));
    if (l.reserve_bytes >= l.ceiling_bytes)
      error("limits.reserve_bytes", fmt::format("{} is not below limits.ceiling_bytes ({})",
                                                l.reserve_bytes, l.ceiling_bytes));
    // Every job mount must be its own place: two mounts at one path, or one inside another,
    // would let a writable mount shadow a read-only one (or the reverse).
    struct Place {
      const char* field;
      std::string path;
    };
    std::vector<Place> places = {{"mounts.source", doc.mounts.source},
                                 {"mounts.output", doc.mounts.output},
                                 {"mounts.scratch", doc.mounts.scratch},
                                 {"mounts.tmp", doc.mounts.tmp}};
    if (doc.toolchain && !doc.toolchain->mount_path.empty())
      places.push_back({"toolchain.mount_path", doc.toolchain->mount_path});
    for (size_t i = 0; i < places.size(); ++i) {
      if (places[i].path == "/") {
        error(places[i].field, "cannot be \"/\" (the job's root is read-only)");
        continue;
      }
      for (size_t j = i + 1; j < places.size(); ++j)
        if (paths_overlap(places[i].path, places[j].path))
          error(places[j].field, fmt::format("\"{}\" overlaps {} (\"{}\")", places[j].path,
                                             places[i].field, places[i].path));
    }
  }

  ParseOptions options_;
  std::vector<std::string> errors_;
  size_t dropped_ = 0;
  FieldReader fields_{
      [this](const std::string& path, const std::string& what) { error(path, what); }};
};

}  // namespace

std::string_view source_kind_name(SourceKind kind) {
  switch (kind) {
    case SourceKind::kGit:
      return "git";
    case SourceKind::kBundle:
      return "bundle";
    case SourceKind::kTree:
      return "tree";
  }
  return "?";
}

std::string_view outputs_from_name(OutputsFrom from) {
  return from == OutputsFrom::kSource ? "source" : "output";
}

bool toolchain_may_be_absent(const AdmissionDocument& doc, const ParseOptions& options) {
  return options.closure_follows || !doc.host_files.empty() || doc.image.has_value() ||
         !doc.trees.empty();
}

Result<AdmissionDocument> parse_admission_json(const json& root, const ParseOptions& options) {
  Parser parser(options);
  AdmissionDocument doc = parser.run(root);
  if (parser.errors().empty()) return doc;
  std::string message;
  for (const std::string& e : parser.errors()) message += (message.empty() ? "" : "; ") + e;
  if (parser.dropped() > 0) message += fmt::format("; and {} more problems", parser.dropped());
  return Error::make(message);
}

Result<AdmissionDocument> parse_admission_bytes(std::string_view bytes,
                                                const ParseOptions& options) {
  auto root = SEALRUN_TRY(parse_strict_json(bytes));
  return parse_admission_json(root, options);
}

}  // namespace sealrun::admission
