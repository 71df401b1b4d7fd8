// SPDX-License-Identifier: Apache-2.0
// carry_closure() and changed_since(): see closure_carry.h.
#include "learn/closure_carry.h"

#include <errno.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>

#include "core/syscall.h"
#include "fingerprint/dir_listing.h"

namespace sealrun::learn {

std::vector<std::string> pinned_places(const admission::AdmissionDocument& doc) {
  std::vector<std::string> places = {doc.mounts.source, doc.mounts.output, doc.mounts.scratch,
                                     doc.mounts.tmp,    "/proc",           "/dev"};
  if (doc.toolchain) places.push_back(doc.toolchain->mount_path);
  for (const admission::TreePin& t : doc.trees) places.push_back(t.job_path);
  return places;
}

CarriedClosure carry_closure(const admission::AdmissionDocument& from,
                             const std::vector<std::string>& places) {
  CarriedClosure out;
  for (const admission::HostFilePin& f : from.host_files) {
    if (path_within_any(f.path, places))
      ++out.dropped;
    else
      out.files.push_back(f);
  }
  // A link above a pinned place would be the way into it: the place wins there too.
  for (const admission::HostLinkPin& l : from.host_links) {
    if (path_overlaps_any(l.path, places))
      ++out.dropped;
    else
      out.links.push_back(l);
  }
  for (const std::string& d : from.host_dirs) {
    if (path_within_any(d, places))
      ++out.dropped;
    else
      out.dirs.push_back(d);
  }
  auto by_path = [](const auto& a, const auto& b) { return a.path < b.path; };
  std::sort(out.files.begin(), out.files.end(), by_path);
  std::sort(out.links.begin(), out.links.end(), by_path);
  std::sort(out.dirs.begin(), out.dirs.end());
  return out;
}

Closure closure_of(const CarriedClosure& carried) {
  Closure c;
  for (const admission::HostFilePin& f : carried.files) c.files.push_back(f.path);
  for (const admission::HostLinkPin& l : carried.links) c.links.push_back({l.path, l.target});
  c.dirs = carried.dirs;
  return c;
}

Result<Closure> look_again(const CarriedClosure& carried) {
  constexpr size_t kNamed = 20;
  std::vector<std::string> problems;
  size_t total = 0;
  auto problem = [&](std::string what) {
    if (++total <= kNamed) problems.push_back(std::move(what));
  };
  // "vanished" or what it is now, for an entry that is not what the closure says.
  auto kind_now = [](const std::string& path, struct stat* st) -> std::string {
    if (::lstat(path.c_str(), st) == 0) return {};
    if (errno == ENOENT || errno == ENOTDIR) return "vanished";
    return fmt::format("cannot be looked at ({})", ::strerror(errno));
  };
  Closure now = closure_of(carried);
  for (const std::string& path : now.files) {
    struct stat st {};
    std::string why = kind_now(path, &st);
    if (why.empty() && !S_ISREG(st.st_mode)) why = "is no longer a regular file";
    if (!why.empty()) problem(fmt::format("{} {}", path, why));
  }
  for (HostLink& link : now.links) {
    struct stat st {};
    std::string why = kind_now(link.path, &st);
    if (why.empty() && !S_ISLNK(st.st_mode)) why = "is no longer a symbolic link";
    if (why.empty()) {
      auto target = read_link_at(AT_FDCWD, link.path.c_str(), st, link.path);
      if (target)
        link.target = std::move(*target);
      else
        why = fmt::format("cannot be read as a link ({})", target.error().message());
    }
    if (!why.empty()) problem(fmt::format("link {} {}", link.path, why));
  }
  for (const std::string& path : now.dirs) {
    struct stat st {};
    std::string why = kind_now(path, &st);
    if (why.empty() && !S_ISDIR(st.st_mode)) why = "is no longer a directory";
    if (!why.empty()) problem(fmt::format("directory {} {}", path, why));
  }
  if (total == 0) return now;
  std::string more = total > kNamed ? fmt::format("; and {} more", total - kNamed) : "";
  return Error::make(fmt::format("{} entr{} of the closure no longer as pinned: {}{}", total,
                                 total == 1 ? "y" : "ies", fmt::join(problems, "; "), more));
}

std::vector<std::string> changed_since(const CarriedClosure& before, const PinnedClosure& now) {
  std::map<std::string, std::string> was;
  for (const admission::HostFilePin& f : before.files) was[f.path] = "file:" + f.sha256;
  for (const admission::HostLinkPin& l : before.links) was[l.path] = "link:" + l.target;
  std::vector<std::string> changed;
  auto compare = [&](const std::string& path, const std::string& pin) {
    auto it = was.find(path);
    if (it == was.end() || it->second != pin) changed.push_back(path);
  };
  for (const PinnedFile& f : now.files) compare(f.path, "file:" + f.sha256);
  for (const HostLink& l : now.links) compare(l.path, "link:" + l.target);
  std::sort(changed.begin(), changed.end());
  return changed;
}

}  // namespace sealrun::learn
