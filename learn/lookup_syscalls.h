// SPDX-License-Identifier: Apache-2.0
// Which system calls a learning or proving run traces to see the paths a job looks up, and how to
// read a path out of one: the pure half of learn/lookup_tracer.h, as data (one table), unit-tested.
//
// fanotify (access_recorder.h) sees what a job opens; a `stat`, `access` or `readlink` opens
// nothing, yet a configure script's `test -x /usr/bin/foo` or CMake's stat of its
// Modules/CMake.cmake decides what the job does next. So these calls stop the job for a tracer
// (seccomp SECCOMP_RET_TRACE, only these calls: everything else runs at full speed). The seccomp
// return data of each traced call is its row in the table below, so the tracer knows the call's
// layout whatever the ABI (x86_64, i386, x32 number the same call differently; the kernel hands the
// arguments over in one form, PTRACE_GET_SYSCALL_INFO).
//
// A path is recorded as the job named it, made absolute against the job's working directory or
// the directory descriptor (both as the job sees them), with "." and repeated slashes dropped and
// ".." kept (a ".." after a link leads elsewhere than the text says; pinning resolves it).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "containment/seccomp_policy.h"

namespace sealrun::learn {

// Which calls: a learning run (lookups; opens are fanotify's, except O_PATH opens, which fanotify
// does not report) or a proving run (lookups and every open, so an open that fails in the learned
// view is seen).
enum class TraceSet { kLearning, kProving };

// One row: how a traced call names its path. Argument numbers are 0-based; -1: none.
struct LookupCall {
  const char* name;  // libseccomp spelling
  int dirfd_arg;     // -1: relative paths start at the working directory
  int path_arg;
  int flags_arg;           // -1: no flags
  uint64_t nofollow_flag;  // in flags: the final link is not followed
  bool follows;            // the final link is followed (unless nofollow_flag is set)
  bool open;               // an open (the proving run also traces plain opens)
};

// The seccomp traces for `set`, each with its row's data.
std::vector<SyscallTrace> traced_syscalls(TraceSet set);
// The row for a seccomp return data; nullptr for one this table never gave out.
const LookupCall* lookup_call(uint16_t data);

// What one stop of a traced call asks for, read from its arguments.
struct LookupArgs {
  std::optional<int> dirfd;  // nullopt: the working directory (also for AT_FDCWD)
  uint64_t path_address = 0;
  bool follow = true;
  bool open = false;
};
std::optional<LookupArgs> lookup_args(uint16_t data, const uint64_t args[6]);

// `path` as the job named it, made absolute against `base` (absolute; ignored for an absolute
// `path`); "." components, repeated and trailing slashes dropped, ".." kept. "" for an empty path.
std::string joined_lookup_path(const std::string& base, const std::string& path);
// What is recorded for a joined path: itself when everything before its first ".." lies within
// one of `roots` (the host shows the same there, so pinning resolves the ".." on the host as the
// job's kernel did), else its lexical form (a ".." out of the job's own /src means what the text
// says there; the host's /src is not the job's).
std::string recorded_lookup_path(const std::string& joined, const std::vector<std::string>& roots);
// `path` (absolute) with ".." taken lexically ("/usr/bin/../lib" -> "/usr/lib"); "/.." is "/".
std::string lexical_path(const std::string& path);
// Whether a looked-up path is kept: lexically within one of `roots` (a root itself included: a
// `test -d /usr` must hold in a view that pins nothing below /usr) and not at or within one of
// `excluded`.
bool lookup_recordable(const std::string& path, const std::vector<std::string>& roots,
                       const std::vector<std::string>& excluded);

}  // namespace sealrun::learn
