// SPDX-License-Identifier: Apache-2.0
// Leaving paths out of a learned closure: see closure_exclude.h.
#include "learn/closure_exclude.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/generated_etc.h"

namespace sealrun::learn {

namespace {

// The exclusion holding `path`, or null.
Exclusion* holder(const std::string& path, std::vector<Exclusion>& exclusions) {
  for (Exclusion& e : exclusions)
    if (path_within(path, e.path)) return &e;
  return nullptr;
}

// Erases the elements `path_of` puts at or below an exclusion, adding one to `count` of it.
template <typename Container, typename PathOf>
void remove_held(Container& items, std::vector<Exclusion>& exclusions, size_t Exclusion::*count,
                 PathOf path_of) {
  for (auto it = items.begin(); it != items.end();) {
    Exclusion* e = holder(path_of(*it), exclusions);
    if (e == nullptr) {
      ++it;
      continue;
    }
    ++((*e).*count);
    it = items.erase(it);
  }
}

}  // namespace

Status check_exclude_path(const std::string& path) {
  auto bad = [&path](const char* why) {
    return Error::make(fmt::format(
        "--learn-exclude {:?}: {}; give an absolute, normalised path such as /etc/ssl/certs", path,
        why));
  };
  if (path.empty() || path[0] != '/') return bad("not an absolute path");
  if (path == "/") return bad("\"/\" would leave out every host file");
  if (path.back() == '/') return bad("a trailing \"/\"");
  size_t start = 1;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    std::string_view part(path.data() + start, end - start);
    if (part.empty()) return bad("an empty component (\"//\")");
    if (part == "." || part == "..") return bad("a \".\" or \"..\" component");
    start = end + 1;
  }
  return ok_status();
}

Result<std::vector<Exclusion>> learning_exclusions(const std::vector<std::string>& caller) {
  std::vector<Exclusion> out;
  out.reserve(kGeneratedEtcPaths.size() + caller.size());
  for (std::string_view p : kGeneratedEtcPaths) out.push_back({std::string(p), true});
  for (const std::string& p : caller) {
    SEALRUN_TRY(check_exclude_path(p));
    bool seen = std::any_of(out.begin(), out.end(),
                            [&p](const Exclusion& e) { return !e.generated && e.path == p; });
    if (!seen) out.push_back({p, false});
  }
  return out;
}

void exclude_observed(ObservedAccess& seen, std::vector<Exclusion>& exclusions) {
  auto self = [](const std::string& p) -> const std::string& { return p; };
  remove_held(seen.files, exclusions, &Exclusion::files, self);
  remove_held(seen.dirs, exclusions, &Exclusion::dirs, self);
}

void exclude_closure(Closure& closure, std::vector<Exclusion>& exclusions) {
  auto self = [](const std::string& p) -> const std::string& { return p; };
  remove_held(closure.files, exclusions, &Exclusion::files, self);
  remove_held(closure.dirs, exclusions, &Exclusion::dirs, self);
  remove_held(closure.links, exclusions, &Exclusion::links,
              [](const HostLink& l) -> const std::string& { return l.path; });
}

}  // namespace sealrun::learn
