// SPDX-License-Identifier: Apache-2.0
// The ids every process holds: see process_ids.h.
#include "containment/process_ids.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <optional>
#include <string>
#include <string_view>

#include "core/bounded_file.h"
#include "core/decimal.h"
#include "core/syscall.h"
#include "core/unique_fd.h"

namespace sealrun {

namespace {

// PIDFD_GET_INFO's argument as of its first version (Linux 6.13, 64 bytes): the kernel fills what
// `mask` asks for and sets in `mask` what it filled. Spelled here because the build's kernel
// headers may predate it.
struct PidfdInfo {
  uint64_t mask = 0;
  uint64_t cgroupid = 0;
  uint32_t pid = 0, tgid = 0, ppid = 0;
  uint32_t ruid = 0, rgid = 0, euid = 0, egid = 0, suid = 0, sgid = 0, fsuid = 0, fsgid = 0;
  int32_t exit_code = 0;
};
static_assert(sizeof(PidfdInfo) == 64);
constexpr uint64_t kPidfdInfoCreds = 1ULL << 1;  // PIDFD_INFO_CREDS
constexpr unsigned long kPidfdGetInfo = _IOWR(0xFF, 11, PidfdInfo);

// Cleared once the kernel says it has no PIDFD_GET_INFO (ENOTTY, EINVAL): not asked again.
std::atomic<bool> g_pidfd_info{true};

// "Uid:\tR\tE\tS\tF" (or Gid:) of one status text, each value added to `out`.
void add_status_ids(std::string_view status, std::string_view key, std::set<uint64_t>& out) {
  size_t at = status.find(key);
  if (at == std::string_view::npos) return;
  size_t end = status.find('\n', at);
  std::string_view line = status.substr(at + key.size(), end - at - key.size());
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
    if (auto v = parse_decimal<uint64_t>(line.substr(i, j - i))) out.insert(*v);
    i = j;
  }
}

void from_status(int proc_fd, const std::string& pid, IdsInUse& in_use) {
  auto text = read_bounded_file(proc_fd, pid + "/status", 16384);
  if (!text) return;  // gone meanwhile
  // A zombie runs nothing and holds nothing; it is gone once its parent reaps it.
  if (text->find("\nState:\tZ") != std::string::npos) return;
  add_status_ids(*text, "\nUid:", in_use.uids);
  add_status_ids(*text, "\nGid:", in_use.gids);
}

enum class Read { kDone, kGone, kUnreadable };

Read from_pidfd(pid_t pid, IdsInUse& in_use) {
  UniqueFd fd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (!fd) return errno == ESRCH ? Read::kGone : Read::kUnreadable;
  PidfdInfo info;
  info.mask = kPidfdInfoCreds;
  if (::ioctl(fd.get(), kPidfdGetInfo, &info) != 0) {
    if (errno == ESRCH) return Read::kGone;
    if (errno == ENOTTY || errno == EINVAL) g_pidfd_info = false;
    return Read::kUnreadable;
  }
  if ((info.mask & kPidfdInfoCreds) == 0) return Read::kUnreadable;
  // Readable once every thread of the process has exited: a zombie (the same test as the status
  // text's "State: Z", but it also counts a process whose leader has exited while other threads
  // still run, which the status text would show as a zombie).
  struct pollfd p {
    fd.get(), POLLIN, 0
  };
  if (::poll(&p, 1, 0) == 1 && (p.revents & POLLIN) != 0) return Read::kDone;
  for (uint32_t id : {info.ruid, info.euid, info.suid, info.fsuid}) in_use.uids.insert(id);
  for (uint32_t id : {info.rgid, info.egid, info.sgid, info.fsgid}) in_use.gids.insert(id);
  return Read::kDone;
}

// Whether /proc names processes as pidfd_open does: /proc of the caller's own pid namespace.
bool proc_is_ours(int proc_fd) {
  char buf[32];
  ssize_t n = ::readlinkat(proc_fd, "self", buf, sizeof(buf));
  return n > 0 && std::string_view(buf, static_cast<size_t>(n)) == std::to_string(::getpid());
}

}  // namespace

IdsInUse ids_in_use(IdsVia via) {
  IdsInUse in_use;
  auto proc = open_at(AT_FDCWD, "/proc", O_RDONLY | O_DIRECTORY);
  if (!proc) return in_use;
  if (via == IdsVia::kBest && !proc_is_ours(proc->get())) via = IdsVia::kProcStatus;
  for (const std::string& name : list_dir_names(proc->get())) {
    auto pid = parse_decimal<uint64_t>(name);
    if (!pid) continue;
    if (via == IdsVia::kBest && g_pidfd_info) {
      Read r = from_pidfd(static_cast<pid_t>(*pid), in_use);
      if (r != Read::kUnreadable) continue;
    }
    from_status(proc->get(), name, in_use);
  }
  return in_use;
}

}  // namespace sealrun
