// SPDX-License-Identifier: Apache-2.0
// Reading /proc: the few facts about a process that sealrun relies on (its state and start time
// from /proc/<pid>/stat, its real uid from /proc/<pid>/status, its children). One parser, rooted at
// a proc directory so unit tests can point it at a fake tree; every file is opened O_CLOEXEC and
// O_NOFOLLOW and read bounded.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace sealrun {

inline constexpr const char* kProcRoot = "/proc";

struct ProcStat {
  char state = '?';       // field 3: R, S, D, Z, X, ...
  std::string starttime;  // field 22, clock ticks after boot, as written (a decimal string)
  bool dead() const { return state == 'Z' || state == 'X'; }
};

// /proc/<pid>/stat. comm (field 2) may hold spaces and parentheses: fields are counted after the
// last ')'.
Result<ProcStat> read_proc_stat(pid_t pid, const std::string& proc_root = kProcRoot);
// Field 22 of /proc/<pid>/stat: with the pid, it names one process across pid reuse.
Result<std::string> process_starttime(pid_t pid, const std::string& proc_root = kProcRoot);
// True when the process {pid, starttime} still runs: /proc/<pid> exists, is not a zombie, and has
// that start time (so a recycled pid is not mistaken for it).
bool process_is_alive(pid_t pid, std::string_view starttime,
                      const std::string& proc_root = kProcRoot);
// Whether any process of `pid` runs now (/proc/<pid> exists). Only for a pid recorded without its
// start time (a temporary file's name): it may be another process by now, so "no" is the answer
// to rely on.
bool process_exists(pid_t pid, const std::string& proc_root = kProcRoot);
// The start time of the calling process.
Result<std::string> own_starttime();
// This boot's id (/proc/sys/kernel/random/boot_id, without its newline): what a record compares
// to know whether the processes, groups, mounts and loop devices it names can still exist (none
// survives a reboot).
Result<std::string> current_boot_id(const std::string& proc_root = kProcRoot);
// The same from the boot_id file at `path` (a test's stand-in for /proc/sys).
Result<std::string> read_boot_id(const std::string& path);
// The real uid ("Uid:" line of /proc/<pid>/status).
Result<uid_t> process_real_uid(pid_t pid, const std::string& proc_root = kProcRoot);
// The direct children of every thread of `pid` (/proc/<pid>/task/*/children; Linux >= 3.5 with
// CONFIG_PROC_CHILDREN). A snapshot: processes come and go meanwhile.
std::vector<pid_t> process_children(pid_t pid, const std::string& proc_root = kProcRoot);

// A field of /proc/<pid>/mountinfo as it names a path: space, tab, newline and backslash are
// written there as \ooo (proc_pid_mountinfo(5)).
std::string unescape_mountinfo(std::string_view field);

}  // namespace sealrun
