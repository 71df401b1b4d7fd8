// The view's pins in an admission (docs/view.md): host
// trees (`trees`), and a learned closure's single files (`host_files`) and links (`host_links`).
// Parsed here, beside parse.cc, with the same rules (every problem reported, each prefixed with its
// JSON path), and checked against the rest of the document: every place in the job is its own —
// a tree, file or link may not sit at, above or below /proc, /dev, "/", a mount (/src, /out,
// /scratch, /tmp), the toolchain's mount or another tree, so nothing pinned is shadowed by, or
// shadows, anything else.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "admission/document.h"
#include "admission/json_fields.h"

namespace sealrun::admission {

void parse_trees(const nlohmann::json& v, std::vector<TreePin>* out, const ProblemSink& problem);
void parse_host_files(const nlohmann::json& v, std::vector<HostFilePin>* out,
                      const ProblemSink& problem);
void parse_host_links(const nlohmann::json& v, std::vector<HostLinkPin>* out,
                      const ProblemSink& problem);
void parse_host_dirs(const nlohmann::json& v, std::vector<std::string>* out,
                     const ProblemSink& problem);

// The cross-document rules above, on a parsed document.
void check_view_places(const AdmissionDocument& doc, const ProblemSink& problem);

// Host places that are never a pinned tree: "/", and the kernel's /proc, /sys and /dev (or below).
// nullopt when `host_path` may be pinned, else why not.
std::optional<std::string> tree_host_path_problem(const std::string& host_path);

}  // namespace sealrun::admission
