// SPDX-License-Identifier: Apache-2.0
// build_closure(): see closure.h for how links are found.
#include "learn/closure.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <map>

#include "core/syscall.h"
#include "core/trusted_dir.h"
#include "fingerprint/dir_listing.h"

namespace sealrun::learn {

namespace {

constexpr int kMaxLinks =
    40;  // the kernel's own limit on links followed in one lookup (MAXSYMLINKS)

// The top-level names a merged-/usr host makes links of (bwrap_argv.cc's system paths).
constexpr const char* kCompatNames[] = {"bin", "sbin", "lib", "lib32", "lib64", "libx32"};

Result<std::vector<std::string>> kept(const std::set<std::string>& seen,
                                      const std::vector<std::string>& roots, bool dirs) {
  std::vector<std::string> out;
  for (const std::string& p : seen) {
    if (!path_within_any(p, roots)) continue;
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0)
      return Error::from_errno(p).context("a host path the learning run opened is gone");
    if (dirs ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))
      return Error::make(
          fmt::format("{}: the learning run opened it as a {}, but it is not one now", p,
                      dirs ? "directory" : "regular file"));
    out.push_back(p);
  }
  return out;
}

}  // namespace

Result<std::string> resolve_recording_links(const std::string& path, std::vector<HostLink>* chain) {
  std::deque<std::string> todo = path_components(path);
  std::string resolved;  // "" is "/"
  int links = 0;
  while (!todo.empty()) {
    std::string part = std::move(todo.front());
    todo.pop_front();
    if (part == ".") continue;
    if (part == "..") {
      resolved = resolved.empty() ? "" : parent_path(resolved);
      if (resolved == "/") resolved.clear();
      continue;
    }
    std::string candidate = resolved + "/" + part;
    struct stat st {};
    if (::lstat(candidate.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) {
      resolved = std::move(candidate);  // a missing name ends nothing: the rest is appended
      continue;
    }
    if (++links > kMaxLinks)
      return Error::make(fmt::format("{}: more than {} symbolic links", path, kMaxLinks));
    std::string target = SEALRUN_TRY(read_link_at(AT_FDCWD, candidate.c_str(), st, candidate));
    chain->push_back({candidate, target});
    std::deque<std::string> more = path_components(target);
    todo.insert(todo.begin(), more.begin(), more.end());
    if (target[0] == '/') resolved.clear();
  }
  return resolved.empty() ? std::string("/") : resolved;
}

Result<Closure> build_closure(const ObservedAccess& seen, const std::vector<std::string>& roots,
                              const ClosureLimits& limits) {
  Closure c;
  c.files = SEALRUN_TRY(kept(seen.files, roots, false));
  c.dirs = SEALRUN_TRY(kept(seen.dirs, roots, true));
  if (c.files.size() > limits.max_files)
    return Error::make(fmt::format(
        "the learning run opened {} host files, over the limit of {} (--learn-max-files)",
        c.files.size(), limits.max_files));

  std::set<std::string> recorded(c.files.begin(), c.files.end());
  recorded.insert(c.dirs.begin(), c.dirs.end());
  std::map<std::string, std::string> links;
  auto keep_chain = [&links](const std::vector<HostLink>& chain) {
    for (const HostLink& l : chain) links.emplace(l.path, l.target);
  };

  // Where to look for links: each recorded path's directory and its ancestors within the roots,
  // each listed directory, and the targets of the compatibility links.
  std::set<std::string> scan;
  for (const std::string& p : recorded) {
    if (std::binary_search(c.dirs.begin(), c.dirs.end(), p)) scan.insert(p);
    for (std::string d = parent_path(p); d != "/" && path_within_any(d, roots); d = parent_path(d))
      if (!scan.insert(d).second) break;  // its ancestors are in already
  }
  for (const char* name : kCompatNames) {
    std::string path = std::string("/") + name;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) continue;
    std::vector<HostLink> chain;
    auto target = SEALRUN_TRY(resolve_recording_links(path, &chain));
    if (::stat(target.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    keep_chain(chain);
    scan.insert(target);
  }

  size_t entries = 0;
  for (const std::string& dir : scan) {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return Error::from_errno("list " + dir).context("finding the links");
    std::unique_ptr<DIR, int (*)(DIR*)> closer(d, ::closedir);
    while (struct dirent* e = ::readdir(d)) {
      if (++entries > limits.max_scanned_entries)
        return Error::make(fmt::format(
            "finding the links the job may have followed looked at more than {} directory "
            "entries; learn a narrower command",
            limits.max_scanned_entries));
      std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      std::string path = dir == "/" ? "/" + name : dir + "/" + name;
      if (e->d_type != DT_LNK) {
        struct stat st {};
        if (e->d_type != DT_UNKNOWN || ::lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode))
          continue;
      }
      std::vector<HostLink> chain;
      auto target = resolve_recording_links(path, &chain);
      if (!target) continue;  // a loop or an unreadable link leads nowhere the job could go
      if (recorded.count(*target) != 0 || scan.count(*target) != 0) keep_chain(chain);
    }
  }
  for (auto& [path, target] : links) c.links.push_back({path, target});
  return c;
}

}  // namespace sealrun::learn
