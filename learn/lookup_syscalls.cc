// SPDX-License-Identifier: Apache-2.0
// The traced calls' table and the path arithmetic: see lookup_syscalls.h.
#include "learn/lookup_syscalls.h"

#include <fcntl.h>

#include <algorithm>
#include <array>

#include "learn/access_recorder.h"

namespace sealrun::learn {

namespace {

constexpr uint64_t kNoFollowAt = AT_SYMLINK_NOFOLLOW;
constexpr uint64_t kEmptyPath = AT_EMPTY_PATH;

// Row i has seccomp data i + 1 (0 is what an untraced stop would carry). The i386 names (stat64,
// lstat64, fstatat64) are traced in that ABI; libseccomp leaves them out of the others.
constexpr std::array<LookupCall, 18> kCalls = {{
    {"stat", -1, 0, -1, 0, true, false},
    {"lstat", -1, 0, -1, 0, false, false},
    {"stat64", -1, 0, -1, 0, true, false},
    {"lstat64", -1, 0, -1, 0, false, false},
    {"newfstatat", 0, 1, 3, kNoFollowAt, true, false},
    {"fstatat64", 0, 1, 3, kNoFollowAt, true, false},
    {"statx", 0, 1, 2, kNoFollowAt, true, false},
    {"access", -1, 0, -1, 0, true, false},
    {"faccessat", 0, 1, -1, 0, true, false},
    {"faccessat2", 0, 1, 3, kNoFollowAt, true, false},
    {"readlink", -1, 0, -1, 0, false, false},
    {"readlinkat", 0, 1, -1, 0, false, false},
    {"chdir", -1, 0, -1, 0, true, false},
    {"execve", -1, 0, -1, 0, true, false},
    {"execveat", 0, 1, 4, kNoFollowAt, true, false},
    {"open", -1, 0, 1, O_NOFOLLOW, true, true},
    {"openat", 0, 1, 2, O_NOFOLLOW, true, true},
    // openat2's flags are behind a pointer (struct open_how): seccomp cannot filter on them, and
    // the tracer takes every openat2 as following links (it is rare; glibc does not use it).
    {"openat2", 0, 1, -1, 0, true, true},
}};

std::vector<std::string> components(const std::string& path) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t slash = path.find('/', pos);
    if (slash == std::string::npos) slash = path.size();
    std::string part = path.substr(pos, slash - pos);
    if (!part.empty() && part != ".") out.push_back(std::move(part));
    pos = slash + 1;
  }
  return out;
}

std::string joined(const std::vector<std::string>& parts) {
  if (parts.empty()) return "/";
  std::string out;
  for (const std::string& p : parts) out += "/" + p;
  return out;
}

}  // namespace

std::vector<SyscallTrace> traced_syscalls(TraceSet set) {
  std::vector<SyscallTrace> out;
  for (size_t i = 0; i < kCalls.size(); ++i) {
    const LookupCall& c = kCalls[i];
    SyscallTrace t{c.name, static_cast<uint16_t>(i + 1), {}};
    const std::string name = c.name;
    // fstat() is newfstatat(fd, "", AT_EMPTY_PATH) in glibc 2.33 and later: by far the most
    // frequent of these calls and no lookup at all. Left untraced (a non-empty path with
    // AT_EMPTY_PATH, which nobody needs, goes unseen; docs/learning.md).
    if (name == "newfstatat" || name == "fstatat64" || name == "statx")
      t.args.push_back({static_cast<unsigned>(c.flags_arg), kEmptyPath, 0});
    // While learning, fanotify sees the opens; only O_PATH opens (which it does not report, and
    // which are how some programs look a path up) stop.
    if (set == TraceSet::kLearning && c.open && c.flags_arg >= 0)
      t.args.push_back({static_cast<unsigned>(c.flags_arg), O_PATH, O_PATH});
    out.push_back(std::move(t));
  }
  return out;
}

const LookupCall* lookup_call(uint16_t data) {
  if (data == 0 || data > kCalls.size()) return nullptr;
  return &kCalls[data - 1];
}

std::optional<LookupArgs> lookup_args(uint16_t data, const uint64_t args[6]) {
  const LookupCall* c = lookup_call(data);
  if (c == nullptr) return std::nullopt;
  LookupArgs out;
  if (c->dirfd_arg >= 0) {
    // An int in every ABI: a 32-bit job's AT_FDCWD arrives as 0xffffff9c.
    int fd = static_cast<int>(static_cast<uint32_t>(args[c->dirfd_arg]));
    if (fd != AT_FDCWD) out.dirfd = fd;
  }
  out.path_address = args[c->path_arg];
  out.follow = c->follows;
  if (c->flags_arg >= 0 && (args[c->flags_arg] & c->nofollow_flag) != 0) out.follow = false;
  out.open = c->open;
  return out;
}

std::string joined_lookup_path(const std::string& base, const std::string& path) {
  if (path.empty()) return "";
  return joined(components(path[0] == '/' ? path : base + "/" + path));
}

std::string lexical_path(const std::string& path) {
  std::vector<std::string> out;
  for (std::string& part : components(path)) {
    if (part != "..")
      out.push_back(std::move(part));
    else if (!out.empty())
      out.pop_back();
  }
  return joined(out);
}

std::string recorded_lookup_path(const std::string& joined, const std::vector<std::string>& roots) {
  size_t dots = joined.find("/..");
  while (dots != std::string::npos && dots + 3 < joined.size() && joined[dots + 3] != '/')
    dots = joined.find("/..", dots + 3);  // "/..." or "/..x" is a name, not ".."
  if (dots == std::string::npos) return joined;
  const std::string before = joined.substr(0, dots);
  bool in_roots = !before.empty() && std::any_of(roots.begin(), roots.end(), [&](const auto& r) {
    return path_within(before, r);
  });
  return in_roots ? joined : lexical_path(joined);
}

bool lookup_recordable(const std::string& path, const std::vector<std::string>& roots,
                       const std::vector<std::string>& excluded) {
  if (path.empty() || path[0] != '/') return false;
  const std::string lex = lexical_path(path);
  auto within = [&lex](const std::string& r) { return path_within(lex, r); };
  return std::any_of(roots.begin(), roots.end(), within) &&
         std::none_of(excluded.begin(), excluded.end(), within);
}

}  // namespace sealrun::learn
