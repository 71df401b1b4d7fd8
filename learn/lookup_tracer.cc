// SPDX-License-Identifier: Apache-2.0
// LookupTracer: see lookup_tracer.h.
#include "learn/lookup_tracer.h"

#include <fmt/format.h>
#include <limits.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "learn/lookup_syscalls.h"

namespace sealrun::learn {

namespace {

constexpr long kOptions = PTRACE_O_TRACESECCOMP | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK |
                          PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL;
// How long finish() waits for the tracees to be gone before it kills what is left (the job has
// ended by then, so its PID namespace is being torn down).
constexpr auto kFinishGrace = std::chrono::seconds(2);

// A NUL-terminated string of at most PATH_MAX bytes at `address` in `pid`, read a page at a time
// (process_vm_readv stops at the first unmapped page). nullopt: unreadable or too long — the call
// fails then too (EFAULT, ENAMETOOLONG), so it looks nothing up.
std::optional<std::string> read_path(pid_t pid, uint64_t address) {
  std::string out;
  char buf[4096];
  while (out.size() <= PATH_MAX) {
    size_t room = 4096 - (address % 4096);
    struct iovec local = {buf, room};
    struct iovec remote = {reinterpret_cast<void*>(address), room};
    ssize_t n = ::process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (n <= 0) return std::nullopt;
    const char* end = static_cast<const char*>(std::memchr(buf, '\0', static_cast<size_t>(n)));
    if (end != nullptr) return out.append(buf, static_cast<size_t>(end - buf));
    out.append(buf, static_cast<size_t>(n));
    address += static_cast<uint64_t>(n);
  }
  return std::nullopt;
}

// readlink(2) of a /proc link: the directory as the job sees it (the path is given relative to
// the root of the job's mount namespace). nullopt when it is not an absolute, existing directory.
std::optional<std::string> proc_dir(const std::string& link) {
  char buf[PATH_MAX + 1];
  ssize_t n = ::readlink(link.c_str(), buf, sizeof buf);
  if (n <= 0 || static_cast<size_t>(n) >= sizeof buf || buf[0] != '/') return std::nullopt;
  std::string dir(buf, static_cast<size_t>(n));
  if (dir.size() > 10 && dir.compare(dir.size() - 10, 10, " (deleted)") == 0) return std::nullopt;
  return dir;
}

}  // namespace

std::unique_ptr<LookupTracer> LookupTracer::create(LookupTracerOptions options) {
  std::unique_ptr<LookupTracer> t(new LookupTracer(std::move(options)));
  t->thread_ = std::thread([raw = t.get()] { raw->run(); });
  return t;
}

LookupTracer::LookupTracer(LookupTracerOptions options) : options_(std::move(options)) {}

LookupTracer::~LookupTracer() { (void)finish(); }

Status LookupTracer::attach(pid_t pid) {
  std::unique_lock lock(mu_);
  if (attach_pid_ != 0) return Error::make("the lookup tracer is already attached");
  attach_pid_ = pid;
  cv_.notify_all();
  cv_.wait(lock, [this] { return attached_.has_value(); });
  return *attached_;
}

ObservedLookups LookupTracer::finish() {
  if (thread_.joinable()) {
    std::unique_lock lock(mu_);
    stop_ = true;
    cv_.notify_all();
    while (!cv_.wait_for(lock, kFinishGrace, [this] { return done_; }))
      if (pid1_alive_) ::kill(attach_pid_, SIGKILL);  // the whole PID namespace goes with it
    lock.unlock();
    thread_.join();
  }
  std::lock_guard lock(mu_);
  return seen_;
}

void LookupTracer::run() {
  pid_t pid = 0;
  {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return attach_pid_ != 0 || stop_; });
    pid = attach_pid_;
    if (pid == 0) {
      attached_ = Status(Error::make("the lookup tracer was stopped before it attached"));
      done_ = true;
      cv_.notify_all();
      return;
    }
    if (::ptrace(PTRACE_SEIZE, pid, nullptr, reinterpret_cast<void*>(kOptions)) != 0) {
      attached_ =
          Status(Error::from_errno(fmt::format("ptrace(PTRACE_SEIZE) of the sandbox ({})", pid))
                     .context("tracing the job's lookups needs root"));
      seen_.incomplete = "the lookup tracer could not attach";
      done_ = true;
      cv_.notify_all();
      return;
    }
    pid1_alive_ = true;
    attached_ = ok_status();
    cv_.notify_all();
  }
  for (;;) {
    int status = 0;
    pid_t p = ::waitpid(-1, &status, __WALL | __WNOTHREAD);
    if (p < 0 && errno == EINTR) continue;
    if (p < 0) {
      std::lock_guard lock(mu_);
      if (errno != ECHILD)
        seen_.incomplete = fmt::format("waiting for the traced job failed: {}", strerror(errno));
      break;
    }
    handle_stop(p, status);
  }
  std::lock_guard lock(mu_);
  done_ = true;
  cv_.notify_all();
}

void LookupTracer::handle_stop(pid_t pid, int status) {
  if (WIFEXITED(status) || WIFSIGNALED(status)) {
    std::lock_guard lock(mu_);
    if (pid == attach_pid_) pid1_alive_ = false;
    return;
  }
  if (!WIFSTOPPED(status)) return;
  const int sig = WSTOPSIG(status);
  const int event = status >> 16;
  int inject = 0;
  switch (event) {
    case PTRACE_EVENT_SECCOMP:
      on_seccomp(pid);
      break;
    case PTRACE_EVENT_FORK:   // the new process is traced already and reports its own first
    case PTRACE_EVENT_VFORK:  // stop (PTRACE_EVENT_STOP with SIGTRAP), handled below
    case PTRACE_EVENT_CLONE:
    case PTRACE_EVENT_EXEC:
      break;
    case PTRACE_EVENT_STOP:
      // A group stop (the job stopped itself or a child with SIGSTOP/SIGTSTP/...): stay stopped
      // until SIGCONT, as without a tracer. Otherwise (SIGTRAP) a new tracee's first stop: go on.
      if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU) {
        (void)::ptrace(PTRACE_LISTEN, pid, nullptr, nullptr);
        return;
      }
      break;
    case 0:
      inject = sig;  // a signal on its way to the job: passed on unchanged
      break;
    default:
      break;
  }
  // ESRCH: killed meanwhile (its exit is still reported).
  (void)::ptrace(PTRACE_CONT, pid, nullptr, reinterpret_cast<void*>(static_cast<long>(inject)));
}

void LookupTracer::on_seccomp(pid_t pid) {
  struct __ptrace_syscall_info info {};
  long n = ::ptrace(PTRACE_GET_SYSCALL_INFO, pid, reinterpret_cast<void*>(sizeof info), &info);
  if (n <= 0 || info.op != PTRACE_SYSCALL_INFO_SECCOMP) return;
  {
    std::lock_guard lock(mu_);
    ++seen_.stops;
  }
  auto call = lookup_args(static_cast<uint16_t>(info.seccomp.ret_data), info.seccomp.args);
  if (!call) return;
  auto path = read_path(pid, call->path_address);
  if (!path || path->empty()) return;  // EFAULT, or an fd-based call (AT_EMPTY_PATH)
  std::string base = "/";
  if ((*path)[0] != '/') {
    auto dir = proc_dir(call->dirfd ? fmt::format("/proc/{}/fd/{}", pid, *call->dirfd)
                                    : fmt::format("/proc/{}/cwd", pid));
    if (!dir) return;  // not a directory it can look below (EBADF, ENOTDIR, deleted: fails)
    base = *dir;
  }
  record(joined_lookup_path(base, *path), call->follow);
}

void LookupTracer::record(const std::string& path, bool follow) {
  if (!lookup_recordable(path, options_.roots, options_.excluded)) return;
  std::string kept = recorded_lookup_path(path, options_.roots);
  std::lock_guard lock(mu_);
  auto& set = follow ? seen_.followed : seen_.unfollowed;
  if (set.count(kept) != 0) return;
  if (seen_.followed.size() + seen_.unfollowed.size() >= options_.max_paths) {
    if (!seen_.incomplete)
      seen_.incomplete =
          fmt::format("the job looked up more than {} distinct host paths", options_.max_paths);
    return;
  }
  set.insert(std::move(kept));
}

}  // namespace sealrun::learn
