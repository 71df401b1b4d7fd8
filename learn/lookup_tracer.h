// SPDX-License-Identifier: Apache-2.0
// What a learning (or proving) run looked up: a ptrace tracer that sees each of the job's traced
// system calls (learn/lookup_syscalls.h: stat, access, readlink, chdir, exec, ... and in a proving
// run every open) and records the path it names, as the job named it.
//
// Attached from outside: the controller is root in the initial user namespace, which may trace
// into the job's; the job's own seccomp policy denies ptrace, which does not concern a tracer.
// attach() is called at bwrap's start gate (JobIo::on_sandbox_ready) with the sandbox's PID 1,
// which waits there after dropping privileges and before its seccomp filter is installed; it then
// forks the command, and with fork, vfork, clone and exec followed (PTRACE_O_TRACE*) every process
// and thread of the job is traced from its first traced call. PTRACE_O_EXITKILL: should the
// controller die, the job dies with it rather than running on untraced (it would not: a traced call
// with no tracer fails with ENOSYS).
//
// ptrace requests must come from the thread that attached, so one thread of its own attaches,
// waits (waitpid(-1, __WALL | __WNOTHREAD): its tracees only; the controller waits for its own
// children by pid) and resumes each stop: seccomp stops (the path read from the job's memory with
// process_vm_readv, a relative one resolved against /proc/TID/cwd or /proc/TID/fd/N, which read
// back as the job sees them), new processes, signal-delivery stops (the signal passed on), group
// stops (PTRACE_LISTEN) and exits. It ends when no tracee is left.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/result.h"

namespace sealrun::learn {

struct ObservedLookups {
  std::set<std::string> followed;    // looked up following a final link (stat, access, open, exec)
  std::set<std::string> unfollowed;  // the final link itself (lstat, readlink, O_NOFOLLOW)
  uint64_t stops = 0;                // traced calls seen
  // Set when the record is not the whole truth (the path cap, a failed attach or wait): learning
  // then fails rather than pin a partial closure.
  std::optional<std::string> incomplete;
};

struct LookupTracerOptions {
  std::vector<std::string> roots;     // only paths lexically within these are kept
  std::vector<std::string> excluded;  // nor within these (the job's own mounts, /proc, /dev)
  size_t max_paths = 400000;          // distinct paths before the record is incomplete
};

class LookupTracer {
 public:
  static std::unique_ptr<LookupTracer> create(LookupTracerOptions options);
  ~LookupTracer();
  LookupTracer(const LookupTracer&) = delete;
  LookupTracer& operator=(const LookupTracer&) = delete;

  // Seizes `pid` (by the tracer's own thread) and returns once it is traced. Called once, from
  // JobIo::on_sandbox_ready, before the start gate opens.
  Status attach(pid_t pid);
  // After the job has ended: waits for the tracer thread (its tracees are gone with the sandbox;
  // any left after a grace period are killed) and returns the record.
  ObservedLookups finish();

 private:
  explicit LookupTracer(LookupTracerOptions options);
  void run();
  void handle_stop(pid_t pid, int status);
  void on_seccomp(pid_t pid);
  void record(const std::string& path, bool follow);

  const LookupTracerOptions options_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  pid_t attach_pid_ = 0;
  std::optional<Status> attached_;
  bool stop_ = false;
  bool done_ = false;
  // The sandbox's PID 1 until its exit is seen: killing it (after the grace period) ends every
  // process of the job, and its pid cannot be reused before its exit has been waited for by us.
  bool pid1_alive_ = false;
  ObservedLookups seen_;
};

}  // namespace sealrun::learn
