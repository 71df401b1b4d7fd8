// SPDX-License-Identifier: Apache-2.0
// Reading, writing and parsing cgroupfs and /proc for the cgroupfs back ends (cgroupfs_io.h).
// Everything is relative to directory fds opened once, so a temp tree can stand in for the kernel.
#include "containment/resgroup/cgroupfs_io.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>

#include "core/decimal.h"
#include "core/process.h"
#include "core/run_id.h"
#include "core/syscall.h"

namespace sealrun::resgroup {
namespace {

// Interface files are small (cgroup.procs of a big group is the largest); 4 MiB is far beyond.
constexpr size_t kMaxCgroupFile = 4 * 1024 * 1024;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n'))
    s.remove_prefix(1);
  return s;
}

template <typename T>
std::optional<T> to_number(std::string_view s) {
  return parse_decimal<T>(s);
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    if (pos == std::string_view::npos) {
      out.push_back(s.substr(start));
      return out;
    }
    out.push_back(s.substr(start, pos - start));
    start = pos + 1;
  }
}

}  // namespace

Result<std::vector<ProcCgroupLine>> parse_proc_cgroup(std::string_view text) {
  std::vector<ProcCgroupLine> lines;
  for (std::string_view line : split(text, '\n')) {
    if (line.empty()) continue;
    size_t c1 = line.find(':');
    size_t c2 = c1 == std::string_view::npos ? c1 : line.find(':', c1 + 1);
    if (c2 == std::string_view::npos)
      return Error::make(fmt::format("malformed /proc cgroup line '{}'", line));
    ProcCgroupLine l;
    auto id = to_number<int>(line.substr(0, c1));
    if (!id) return Error::make(fmt::format("malformed hierarchy id in '{}'", line));
    l.hierarchy_id = *id;
    std::string_view ctl = line.substr(c1 + 1, c2 - c1 - 1);
    if (!ctl.empty())
      for (auto c : split(ctl, ',')) l.controllers.emplace_back(c);
    l.path = std::string(line.substr(c2 + 1));
    if (l.path.empty() || l.path.front() != '/')
      return Error::make(fmt::format("cgroup path is not absolute in '{}'", line));
    lines.push_back(std::move(l));
  }
  return lines;
}

std::optional<std::string> path_of(const std::vector<ProcCgroupLine>& lines,
                                   std::string_view controller) {
  for (const auto& l : lines) {
    if (controller.empty()) {
      if (l.hierarchy_id == 0 && l.controllers.empty()) return l.path;
      continue;
    }
    for (const auto& c : l.controllers)
      if (c == controller) return l.path;
  }
  return std::nullopt;
}

Result<uint64_t> parse_limit_value(std::string_view text, const std::string& what) {
  std::string_view t = trim(text);
  if (t == "max") return kUnlimited;
  auto v = to_number<uint64_t>(t);
  if (!v) return Error::make(fmt::format("{}: expected a number or 'max', read '{}'", what, t));
  return *v;
}

std::map<std::string, uint64_t> parse_flat_keyed(std::string_view text) {
  std::map<std::string, uint64_t> out;
  for (std::string_view line : split(text, '\n')) {
    size_t sp = line.find(' ');
    if (sp == std::string_view::npos) continue;
    auto v = to_number<uint64_t>(trim(line.substr(sp + 1)));
    if (v) out[std::string(line.substr(0, sp))] = *v;
  }
  return out;
}

Result<std::vector<pid_t>> parse_pid_list(std::string_view text, const std::string& what) {
  std::vector<pid_t> pids;
  for (std::string_view line : split(text, '\n')) {
    line = trim(line);
    if (line.empty()) continue;
    auto v = to_number<pid_t>(line);
    if (!v || *v <= 0) return Error::make(fmt::format("{}: not a pid: '{}'", what, line));
    pids.push_back(*v);
  }
  return pids;
}

Result<std::string> read_cgroup_file(int dirfd, const std::string& name) {
  auto fd = SEALRUN_TRY(open_at(dirfd, name, O_RDONLY | O_NOFOLLOW));
  return read_up_to(fd.get(), kMaxCgroupFile, name);
}

Status write_cgroup_file(int dirfd, const std::string& name, std::string_view value) {
  auto fd = SEALRUN_TRY(open_at(dirfd, name, O_WRONLY | O_TRUNC | O_NOFOLLOW));
  // cgroupfs takes one value per write(2); write_all would split only on a short write, which
  // kernfs does not do for these sizes.
  return write_all(fd.get(), value, fmt::format("{} (value '{}')", name, value));
}

bool cgroup_file_exists(int dirfd, const std::string& name) {
  struct stat st {};
  return ::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

Result<UniqueFd> open_dir_beneath(int rootfd, const std::string& relpath) {
  if (relpath.empty() || relpath == ".") {
    int fd = ::fcntl(rootfd, F_DUPFD_CLOEXEC, 3);
    if (fd < 0) return Error::from_errno("dup cgroupfs root");
    return UniqueFd(fd);
  }
  struct open_how how {};
  how.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  int fd = retry_eintr([&] {
    return static_cast<int>(::syscall(SYS_openat2, rootfd, relpath.c_str(), &how, sizeof how));
  });
  if (fd < 0) return Error::from_errno(fmt::format("open directory {}", relpath));
  return UniqueFd(fd);
}

bool is_cgroupfs(int fd, bool want_v2) {
  struct statfs sfs {};
  if (::fstatfs(fd, &sfs) != 0) return false;
  return want_v2 ? sfs.f_type == CGROUP2_SUPER_MAGIC : sfs.f_type == CGROUP_SUPER_MAGIC;
}

Status require_group_run_id(std::string_view run_id) {
  if (is_valid_run_id(run_id)) return ok_status();
  return Error::make(fmt::format(
      "run id '{}' is not usable in a cgroup name (allowed: A-Z a-z 0-9 _ . -, at most 64)",
      run_id));
}

std::string group_dir_name(std::string_view run_id, pid_t creator_pid,
                           std::string_view creator_start) {
  return fmt::format("{}{}.{}.{}", kGroupPrefix, run_id, creator_pid, creator_start);
}

std::optional<GroupName> parse_group_dir_name(std::string_view name) {
  if (name.substr(0, kGroupPrefix.size()) != kGroupPrefix) return std::nullopt;
  std::string_view rest = name.substr(kGroupPrefix.size());
  // Parsed from the right: the run id may itself contain dots.
  size_t d2 = rest.rfind('.');
  if (d2 == std::string_view::npos || d2 == 0) return std::nullopt;
  size_t d1 = rest.rfind('.', d2 - 1);
  if (d1 == std::string_view::npos) return std::nullopt;
  GroupName g;
  g.run_id = std::string(rest.substr(0, d1));
  auto pid = to_number<pid_t>(rest.substr(d1 + 1, d2 - d1 - 1));
  auto start = to_number<uint64_t>(rest.substr(d2 + 1));
  if (!pid || *pid <= 0 || !start || !is_valid_run_id(g.run_id)) return std::nullopt;
  g.creator_pid = *pid;
  g.creator_start = std::string(rest.substr(d2 + 1));
  return g;
}

namespace {}  // namespace

std::optional<AncestorLimit> lowest_limit_up_the_tree(int dirfd, const std::string& path,
                                                      const std::string& file,
                                                      uint64_t no_limit_from) {
  std::optional<AncestorLimit> lowest;
  std::string here = path.empty() ? "/" : path;
  UniqueFd owned;
  int fd = dirfd;
  while (true) {
    if (auto text = read_cgroup_file(fd, file); text) {
      auto v = parse_limit_value(*text, file);
      if (v && *v < no_limit_from && (!lowest || *v < lowest->value)) lowest = {*v, here};
    }
    if (here == "/") break;
    auto parent = open_at(fd, "..", O_RDONLY | O_DIRECTORY);
    if (!parent) break;
    owned = std::move(*parent);
    fd = owned.get();
    size_t slash = here.rfind('/');
    here = slash == 0 ? "/" : here.substr(0, slash);
  }
  return lowest;
}

uint64_t signal_members(const std::string& proc_root, const std::vector<pid_t>& pids, int sig,
                        const std::function<bool(std::string_view)>& is_member) {
  uint64_t n = 0;
  for (pid_t pid : pids) {
    UniqueFd pidfd(pidfd_open_raw(pid, 0));
    if (!pidfd) continue;  // already gone
    auto fd = open_at(AT_FDCWD, fmt::format("{}/{}/cgroup", proc_root, pid), O_RDONLY);
    if (!fd) continue;
    auto text = read_up_to(fd->get(), 65536, "cgroup");
    if (!text) continue;
    // The pidfd was opened before the read: if it still refers to a live process now, the text
    // we read was that process's, not a successor's on a recycled pid.
    if (pidfd_send_signal_raw(pidfd.get(), 0) != 0) continue;
    if (!is_member(*text)) continue;
    if (pidfd_send_signal_raw(pidfd.get(), sig) == 0) ++n;
  }
  return n;
}

bool poll_until(const std::function<bool()>& done, int64_t timeout_ms, int64_t interval_ms) {
  int64_t deadline = monotonic_ms() + timeout_ms;
  while (true) {
    if (done()) return true;
    if (monotonic_ms() >= deadline) return false;
    ::usleep(static_cast<useconds_t>(std::max<int64_t>(interval_ms, 1) * 1000));
  }
}

Result<std::vector<std::string>> split_clean_path(std::string_view rel, const std::string& what) {
  std::vector<std::string> parts;
  while (!rel.empty() && rel.front() == '/') rel.remove_prefix(1);
  while (!rel.empty() && rel.back() == '/') rel.remove_suffix(1);
  if (rel.empty()) return parts;
  for (auto p : split(rel, '/')) {
    if (p.empty() || p == "." || p == "..")
      return Error::make(
          fmt::format("{}: refusing path with an empty, '.' or '..' component", what));
    parts.emplace_back(p);
  }
  return parts;
}

}  // namespace sealrun::resgroup
