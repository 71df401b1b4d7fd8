// SPDX-License-Identifier: Apache-2.0
// The narrow kernel seam shared by the cgroupfs back ends (v1 and v2): where cgroupfs and /proc
// are (parameters, so unit tests point them at a temp tree and integration tests at the real
// thing), reading and writing cgroup interface files relative to a directory fd, parsing what the
// kernel writes there (/proc/<pid>/cgroup, "max", flat-keyed files, pid lists), the names sealrun
// gives the groups it creates (so that ownership and the creator's liveness can be proven from the
// name alone), and signalling group members by pidfd after checking they are still members.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/proc.h"
#include "core/result.h"
#include "core/unique_fd.h"

namespace sealrun::resgroup {

// Where the kernel interfaces live. Defaults are the real ones.
struct CgroupfsSeams {
  std::string cgroupfs_root = "/sys/fs/cgroup";
  std::string proc_self_cgroup = "/proc/self/cgroup";
  std::string proc_root = "/proc";
  // Real cgroupfs directories are checked with fstatfs (cgroup or cgroup2 magic) before sealrun
  // acts on them; a unit test's temp tree turns this off.
  bool require_cgroupfs_magic = true;
  // Called after sealrun made a group directory: lets a unit test play the kernel and create the
  // interface files that a real mkdir(2) on cgroupfs makes appear. Unset in production.
  std::function<void(const std::string& dir_path)> after_mkdir;
  // How long a stop waits for the kernel to report the group empty after the kill.
  int64_t confirm_timeout_ms = 10000;
  int64_t poll_interval_ms = 10;
};

inline constexpr uint64_t kUnlimited = UINT64_MAX;
inline constexpr std::string_view kGroupPrefix = "sealrun-";

// One line of /proc/<pid>/cgroup: "4:memory:/process_api/x" or "0::/user.slice".
struct ProcCgroupLine {
  int hierarchy_id = -1;
  std::vector<std::string> controllers;  // empty for the v2 line; may hold "name=systemd"
  std::string path;                      // absolute within the hierarchy, "/" for its root
};
Result<std::vector<ProcCgroupLine>> parse_proc_cgroup(std::string_view text);
// The path of `controller` in parsed lines ("" for the v2 line when controller is empty).
std::optional<std::string> path_of(const std::vector<ProcCgroupLine>& lines,
                                   std::string_view controller);

// "max" → kUnlimited; a decimal → its value; anything else → error naming `what`.
Result<uint64_t> parse_limit_value(std::string_view text, const std::string& what);
// "key value" lines (memory.events, memory.stat, memory.oom_control, cgroup.events).
std::map<std::string, uint64_t> parse_flat_keyed(std::string_view text);
// One pid per line (cgroup.procs).
Result<std::vector<pid_t>> parse_pid_list(std::string_view text, const std::string& what);

// Reads a cgroup interface file (never following a symlink) relative to a group directory fd.
Result<std::string> read_cgroup_file(int dirfd, const std::string& name);
// Writes `value` to an existing cgroup interface file (O_WRONLY|O_TRUNC, no O_CREAT).
Status write_cgroup_file(int dirfd, const std::string& name, std::string_view value);
bool cgroup_file_exists(int dirfd, const std::string& name);

// Opens a directory below `rootfd` along `relpath` without following any symlink and without
// leaving the root (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS). O_PATH is not used: the fd
// is used for openat/unlinkat/fstatfs.
Result<UniqueFd> open_dir_beneath(int rootfd, const std::string& relpath);
// True when fd is on a cgroup (v1) or cgroup2 filesystem.
bool is_cgroupfs(int fd, bool want_v2);

// Names of groups sealrun creates: "sealrun-<run_id>.<creator pid>.<creator starttime>".
// The creator's pid and /proc starttime make it possible to tell, from the name alone, whether the
// controller that made it is still alive (sweep never touches a live controller's group).
// The same, as the error both cgroup back ends give for an id they cannot name a group after.
Status require_group_run_id(std::string_view run_id);
std::string group_dir_name(std::string_view run_id, pid_t creator_pid,
                           std::string_view creator_start);
struct GroupName {
  std::string run_id;
  pid_t creator_pid = 0;
  std::string creator_start;
};
std::optional<GroupName> parse_group_dir_name(std::string_view name);

// The lowest limit that `file` sets on a group through its ancestors (ACCEPTANCE 33): reads
// `file` in the directory `dirfd` (whose path in the hierarchy is `path`, e.g. "/a/b") and in each
// ancestor up to the hierarchy's root, walking ".." from the descriptor exactly as many levels as
// `path` has. Values at or above `no_limit_from` (v1's page-aligned LONG_MAX, v2's "max") are no
// limit. nullopt when no level sets one.
struct AncestorLimit {
  uint64_t value = 0;
  std::string path;  // the group that sets it, in the hierarchy ("/" for the root)
};
std::optional<AncestorLimit> lowest_limit_up_the_tree(int dirfd, const std::string& path,
                                                      const std::string& file,
                                                      uint64_t no_limit_from = 1ull << 62);

// Signals every pid in `pids` through a pidfd, but only if, once the pidfd pins the process,
// `is_member` (given /proc/<pid>/cgroup's text) says it is still in the group: a pid that exited
// and was recycled between reading cgroup.procs and pidfd_open is never hit. Returns how many
// processes were signalled.
uint64_t signal_members(const std::string& proc_root, const std::vector<pid_t>& pids, int sig,
                        const std::function<bool(std::string_view)>& is_member);

// Polls `done` every interval_ms until it returns true or timeout_ms passed; returns its last
// value.
bool poll_until(const std::function<bool()>& done, int64_t timeout_ms, int64_t interval_ms);

// Splits "a/b/c" into components; refuses empty, "." and ".." components.
Result<std::vector<std::string>> split_clean_path(std::string_view rel, const std::string& what);

}  // namespace sealrun::resgroup
