// SPDX-License-Identifier: Apache-2.0
// Thin system-call wrappers: retry on EINTR, capture errno once into an Error that names the call
// and its object, and return owned descriptors. Everything here opens with O_CLOEXEC from birth.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cerrno>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/unique_fd.h"

namespace sealrun {

// Calls fn() until it does not fail with EINTR.
template <typename Fn>
auto retry_eintr(Fn&& fn) -> decltype(fn()) {
  decltype(fn()) rc;
  do {
    rc = fn();
  } while (rc == -1 && errno == EINTR);
  return rc;
}

// openat(2) with O_CLOEXEC always added. `path` is relative to `dirfd` (AT_FDCWD for the cwd).
Result<UniqueFd> open_at(int dirfd, const std::string& path, int flags, mode_t mode = 0);
Result<struct stat> fstat_fd(int fd, const std::string& what);
Result<struct stat> lstat_at(int dirfd, const std::string& path);

// Writes every byte (retrying short writes and EINTR).
Status write_all(int fd, std::string_view bytes, const std::string& what);
// Reads up to `max` bytes; returns fewer only at end of file.
Result<std::string> read_up_to(int fd, size_t max, const std::string& what);

// pipe2(O_CLOEXEC): [0] read end, [1] write end.
struct Pipe {
  UniqueFd read_end;
  UniqueFd write_end;
};
Result<Pipe> make_pipe(int extra_flags = 0);

// The names in the directory `dirfd` refers to (without "." and ".."), at most `max` of them;
// `dirfd` itself is left open and unmoved (a duplicate is read). Empty when it cannot be read.
std::vector<std::string> list_dir_names(int dirfd, size_t max = 1 << 20);

// mkdir(2) that tolerates nothing: the directory must be new.
Status make_dir_at(int dirfd, const std::string& path, mode_t mode);

// Milliseconds on CLOCK_MONOTONIC; for timeouts and durations, never for timestamps.
int64_t monotonic_ms();
// Wall-clock time as RFC 3339 UTC with milliseconds ("2026-11-30T01:02:03.456Z"), for records.
std::string utc_timestamp_now();

}  // namespace sealrun
