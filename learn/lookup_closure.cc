// SPDX-License-Identifier: Apache-2.0
// add_lookups(), drop_under_places(), lacking_in_view(): see lookup_closure.h.
#include "learn/lookup_closure.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>

#include "core/syscall.h"
#include "fingerprint/dir_listing.h"

namespace sealrun::learn {

namespace {

// `path` resolved on the host: the links met on the way and where it ends. Without `follow`
// the last component is not followed (lstat, readlink). nullopt: a loop (the job got ELOOP).
struct Resolved {
  std::vector<HostLink> chain;
  std::string end;
};
std::optional<Resolved> resolve_lookup(const std::string& path, bool follow) {
  Resolved r;
  const std::string base = path.substr(path.rfind('/') + 1);
  if (follow || path == "/" || base == "..") {
    auto end = resolve_recording_links(path, &r.chain);
    if (!end) return std::nullopt;
    r.end = *end;
    return r;
  }
  auto dir = resolve_recording_links(parent_path(path), &r.chain);
  if (!dir) return std::nullopt;
  r.end = (*dir == "/" ? "" : *dir) + "/" + base;
  return r;
}

template <typename F>
void each_lookup(const ObservedLookups& looked, F&& f) {
  for (const std::string& p : looked.followed) f(p, true);
  for (const std::string& p : looked.unfollowed) f(p, false);
}

// Whether sorted `paths` holds one strictly below `dir`.
bool has_below(const std::vector<std::string>& paths, const std::string& dir) {
  const std::string prefix = dir == "/" ? "/" : dir + "/";
  auto it = std::lower_bound(paths.begin(), paths.end(), prefix);
  return it != paths.end() && it->compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

Status add_lookups(const ObservedLookups& looked, const std::vector<std::string>& roots,
                   const std::vector<std::string>& excluded, size_t max_files, Closure* closure) {
  std::set<std::string> files(closure->files.begin(), closure->files.end());
  std::set<std::string> dirs(closure->dirs.begin(), closure->dirs.end());
  std::map<std::string, std::string> links;
  for (const HostLink& l : closure->links) links.emplace(l.path, l.target);
  auto ours = [&](const std::string& p) {
    return path_within_any(p, roots) && !path_within_any(p, excluded);
  };
  each_lookup(looked, [&](const std::string& path, bool follow) {
    auto r = resolve_lookup(path, follow);
    if (!r) return;
    for (const HostLink& l : r->chain)
      if (ours(l.path)) links.emplace(l.path, l.target);
    if (!ours(r->end)) return;
    struct stat st {};
    if (::lstat(r->end.c_str(), &st) != 0) return;  // absent here, absent in the view
    if (S_ISREG(st.st_mode)) {
      files.insert(r->end);
    } else if (S_ISDIR(st.st_mode)) {
      dirs.insert(r->end);
    } else if (S_ISLNK(st.st_mode)) {
      if (auto target = read_link_at(AT_FDCWD, r->end.c_str(), st, r->end))
        links.emplace(r->end, *target);
    }
  });
  if (files.size() > max_files)
    return Error::make(
        fmt::format("the learning run opened or looked up {} host files, over the limit of {} "
                    "(--learn-max-files)",
                    files.size(), max_files));
  closure->files.assign(files.begin(), files.end());
  closure->dirs.assign(dirs.begin(), dirs.end());
  closure->links.clear();
  for (auto& [path, target] : links) closure->links.push_back({path, target});
  return ok_status();
}

size_t drop_under_places(const std::vector<std::string>& places, Closure* closure) {
  size_t dropped = 0;
  auto under = [&](const std::string& p) {
    bool drop = path_within_any(p, places);
    dropped += drop ? 1 : 0;
    return drop;
  };
  closure->files.erase(std::remove_if(closure->files.begin(), closure->files.end(), under),
                       closure->files.end());
  closure->dirs.erase(std::remove_if(closure->dirs.begin(), closure->dirs.end(), under),
                      closure->dirs.end());
  auto link_in_the_way = [&](const HostLink& l) {
    bool drop = path_overlaps_any(l.path, places);
    dropped += drop ? 1 : 0;
    return drop;
  };
  closure->links.erase(
      std::remove_if(closure->links.begin(), closure->links.end(), link_in_the_way),
      closure->links.end());
  return dropped;
}

std::vector<std::string> lacking_in_view(const ObservedLookups& looked,
                                         const std::vector<std::string>& roots,
                                         const std::vector<std::string>& places,
                                         const Closure& closure) {
  std::map<std::string, std::string> links;
  for (const HostLink& l : closure.links) links.emplace(l.path, l.target);
  std::vector<std::string> all = closure.files;  // everything placed, for "something below"
  all.insert(all.end(), closure.dirs.begin(), closure.dirs.end());
  for (const HostLink& l : closure.links) all.push_back(l.path);
  all.insert(all.end(), places.begin(), places.end());
  std::sort(all.begin(), all.end());
  auto shown = [&](const std::string& p) { return path_within_any(p, places); };
  std::set<std::string> lacking;
  each_lookup(looked, [&](const std::string& path, bool follow) {
    if (!path_within_any(path, roots) || shown(path)) return;
    auto r = resolve_lookup(path, follow);
    if (!r) return;
    for (const HostLink& l : r->chain) {
      auto it = links.find(l.path);
      if (path_within_any(l.path, roots) && !shown(l.path) &&
          (it == links.end() || it->second != l.target))
        lacking.insert(l.path == path ? path : fmt::format("{} (the link {})", path, l.path));
    }
    if (!path_within_any(r->end, roots) || shown(r->end)) return;
    struct stat st {};
    if (::lstat(r->end.c_str(), &st) != 0) return;
    bool there = false;
    if (S_ISREG(st.st_mode))
      there = std::binary_search(closure.files.begin(), closure.files.end(), r->end);
    else if (S_ISDIR(st.st_mode))
      there = std::binary_search(closure.dirs.begin(), closure.dirs.end(), r->end) ||
              has_below(all, r->end);
    else if (S_ISLNK(st.st_mode))
      there = links.count(r->end) != 0;
    else
      there = true;  // not a kind a closure pins: absent in both
    if (!there) lacking.insert(r->end == path ? path : fmt::format("{} (-> {})", path, r->end));
  });
  return {lacking.begin(), lacking.end()};
}

}  // namespace sealrun::learn
