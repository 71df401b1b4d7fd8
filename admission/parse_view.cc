// SPDX-License-Identifier: Apache-2.0
// Parsing and placing the view's pins: see parse_view.h.
#include "admission/parse_view.h"

#include <fmt/format.h>

#include <set>

#include "admission/json_fields.h"
#include "admission/path_rules.h"
#include "core/hex.h"
#include "core/strict_json.h"

namespace sealrun::admission {

using nlohmann::json;

namespace {

constexpr size_t kMaxTrees = 64;
// A closure of a C toolchain is a few hundred files; the admission's 1 MiB bound caps it anyway.
constexpr size_t kMaxHostFiles = 65536;
constexpr size_t kMaxLinkTarget = 4096;

// An object with exactly `keys`.
bool exact_object(const FieldReader& r, const json& v, const std::string& path,
                  std::initializer_list<const char*> keys) {
  return r.object(v, path) && r.keys(v, path, keys, {});
}

bool below_kernel_place(const std::string& path) {
  for (const char* k : {"/proc", "/sys", "/dev"})
    if (paths_overlap(path, k)) return true;
  return false;
}

}  // namespace

std::optional<std::string> tree_host_path_problem(const std::string& host_path) {
  if (host_path == "/")
    return std::string(
        "\"/\" is the whole host, not a tree to pin; pin the directories the job "
        "needs (e.g. /usr)");
  if (below_kernel_place(host_path))
    return fmt::format(
        "\"{}\" is (or lies below) /proc, /sys or /dev: kernel state, not files to "
        "pin",
        host_path);
  return std::nullopt;
}

void parse_trees(const json& v, std::vector<TreePin>* out, const ProblemSink& problem) {
  FieldReader r(problem);
  if (!r.array(v, "trees", kMaxTrees)) return;
  for (size_t i = 0; i < v.size(); ++i) {
    std::string p = json_path_index("trees", i);
    if (!exact_object(r, v[i], p, {"host_path", "job_path", "tree_sha256"})) continue;
    TreePin t;
    bool good = r.abs_path(v[i]["host_path"], p + ".host_path", &t.host_path);
    good = r.abs_path(v[i]["job_path"], p + ".job_path", &t.job_path) && good;
    good = r.sha256(v[i]["tree_sha256"], p + ".tree_sha256", &t.tree_sha256) && good;
    if (good) {
      if (auto why = tree_host_path_problem(t.host_path)) {
        problem(p + ".host_path", *why);
        continue;
      }
      out->push_back(std::move(t));
    }
  }
}

void parse_host_files(const json& v, std::vector<HostFilePin>* out, const ProblemSink& problem) {
  FieldReader r(problem);
  if (!r.array(v, "host_files", kMaxHostFiles)) return;
  std::set<std::string> seen;
  for (size_t i = 0; i < v.size(); ++i) {
    std::string p = json_path_index("host_files", i);
    if (!exact_object(r, v[i], p, {"path", "sha256"})) continue;
    HostFilePin f;
    bool good = r.abs_path(v[i]["path"], p + ".path", &f.path);
    good = r.sha256(v[i]["sha256"], p + ".sha256", &f.sha256) && good;
    if (good && !seen.insert(f.path).second) {
      problem(p + ".path", fmt::format("\"{}\" is listed twice", f.path));
      good = false;
    }
    if (good) out->push_back(std::move(f));
  }
}

void parse_host_dirs(const json& v, std::vector<std::string>* out, const ProblemSink& problem) {
  FieldReader r(problem);
  if (!r.array(v, "host_dirs", kMaxHostFiles)) return;
  std::set<std::string> seen;
  for (size_t i = 0; i < v.size(); ++i) {
    std::string p = json_path_index("host_dirs", i), dir;
    if (!r.abs_path(v[i], p, &dir)) continue;
    if (!seen.insert(dir).second) {
      problem(p, fmt::format("\"{}\" is listed twice", dir));
      continue;
    }
    out->push_back(std::move(dir));
  }
}

void parse_host_links(const json& v, std::vector<HostLinkPin>* out, const ProblemSink& problem) {
  FieldReader r(problem);
  if (!r.array(v, "host_links", kMaxHostFiles)) return;
  std::set<std::string> seen;
  for (size_t i = 0; i < v.size(); ++i) {
    std::string p = json_path_index("host_links", i);
    if (!exact_object(r, v[i], p, {"path", "target"})) continue;
    HostLinkPin l;
    bool good = r.abs_path(v[i]["path"], p + ".path", &l.path);
    if (r.string(v[i]["target"], p + ".target", &l.target)) {
      if (l.target.empty() || l.target.size() > kMaxLinkTarget ||
          l.target.find('\0') != std::string::npos) {
        problem(p + ".target",
                fmt::format("a link's text is 1-{} bytes without NUL", kMaxLinkTarget));
        good = false;
      }
    } else {
      good = false;
    }
    if (good && !seen.insert(l.path).second) {
      problem(p + ".path", fmt::format("\"{}\" is listed twice", l.path));
      good = false;
    }
    if (good) out->push_back(std::move(l));
  }
}

void check_view_places(const AdmissionDocument& doc, const ProblemSink& problem) {
  struct Place {
    std::string field;
    std::string path;
  };
  // The places that already exist in the job, each its own: the mounts and the toolchain.
  std::vector<Place> places = {
      {"mounts.source", doc.mounts.source},   {"mounts.output", doc.mounts.output},
      {"mounts.scratch", doc.mounts.scratch}, {"mounts.tmp", doc.mounts.tmp},
      {"/proc (the job's own)", "/proc"},     {"/dev (the job's own)", "/dev"}};
  if (doc.toolchain && !doc.toolchain->mount_path.empty())
    places.push_back({"toolchain.mount_path", doc.toolchain->mount_path});
  auto place = [&](const std::string& field, const std::string& path) {
    if (path == "/") {
      problem(field, "cannot be \"/\" (the job's root is built from the view)");
      return;
    }
    for (const Place& other : places)
      if (paths_overlap(path, other.path)) {
        problem(field, fmt::format("\"{}\" overlaps {} (\"{}\"); every place in the job is its "
                                   "own",
                                   path, other.field, other.path));
        return;
      }
    places.push_back({field, path});
  };
  for (size_t i = 0; i < doc.trees.size(); ++i)
    place(json_path_index("trees", i) + ".job_path", doc.trees[i].job_path);
  // Files and links may share directories with each other (they are single entries), but not
  // with a mount, a tree, or a link's own path (a file below a link would go through it).
  for (size_t i = 0; i < doc.host_links.size(); ++i)
    place(json_path_index("host_links", i) + ".path", doc.host_links[i].path);
  for (size_t i = 0; i < doc.host_files.size(); ++i) {
    std::string field = json_path_index("host_files", i) + ".path";
    const std::string& path = doc.host_files[i].path;
    if (below_kernel_place(path)) {
      problem(field, fmt::format("\"{}\" lies below /proc, /sys or /dev", path));
      continue;
    }
    for (size_t j = 0; j < places.size(); ++j)
      if (paths_overlap(path, places[j].path)) {
        problem(field,
                fmt::format("\"{}\" overlaps {} (\"{}\")", path, places[j].field, places[j].path));
        break;
      }
  }
  // A directory is made in the empty root: never below a mount, a tree or a link (bwrap could
  // not make it there, or it would go through the link); above one it is already there.
  for (size_t i = 0; i < doc.host_dirs.size(); ++i) {
    std::string field = json_path_index("host_dirs", i);
    const std::string& dir = doc.host_dirs[i];
    if (dir == "/" || below_kernel_place(dir)) {
      problem(field, fmt::format("\"{}\" is \"/\" or lies below /proc, /sys or /dev", dir));
      continue;
    }
    for (const Place& place : places)
      if (paths_overlap(dir, place.path) && dir.size() >= place.path.size()) {
        problem(field,
                fmt::format("\"{}\" lies at or below {} (\"{}\")", dir, place.field, place.path));
        break;
      }
  }
}

}  // namespace sealrun::admission
