// SPDX-License-Identifier: Apache-2.0
// Writing a file so that a reader sees either the old complete file or the new complete file, and
// a crash or a full disk leaves the old one intact: write a temporary in the same directory, fsync
// it, rename it over the target, fsync the directory (rename(2) is atomic within a filesystem
// only). And the same without any fsync, for a file that only describes what a reboot destroys.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"

namespace sealrun {

// Whether the directory is fsynced after the rename. The file's data is fsynced before the rename
// either way, so a crash leaves the old complete file or the new complete one, never a torn one.
//   kNow:   the new name is durable when the call returns.
//   kLater: the rename becomes durable with the next fsync of the same directory (or the kernel's
//           own writeback). For a file another write into the same directory fsyncs soon after
//           (one directory fsync for several renames), or for a new version whose loss in a power
//           failure costs nothing because the old version still says all that survives a reboot.
enum class DirSync { kNow, kLater };

// Atomically replaces (or creates) `path` with `bytes`. On any failure the temporary is removed and
// the previous file, if any, is untouched.
Status write_file_atomic(const std::string& path, std::string_view bytes, mode_t mode = 0644);
// The same for the file `name` (no '/') in the directory `dirfd`; `what` names it in errors.
Status write_file_atomic_in(int dirfd, const std::string& name, std::string_view bytes, mode_t mode,
                            const std::string& what, DirSync dir_sync = DirSync::kNow);

// Atomic for every reader while the machine runs (temporary + rename, so a killed writer leaves the
// old complete file or the new one), but nothing is fsynced: after a power failure the file may be
// missing, old, empty or torn. Only for a file whose content names what does not survive a reboot
// (processes, cgroups, mounts, loop devices), so that a lost version costs nothing, and whose
// reader knows that (e.g. by a boot id kept in a durable companion).
Status write_file_volatile_in(int dirfd, const std::string& name, std::string_view bytes,
                              mode_t mode, const std::string& what);

// The pid of the process that was writing `name`, when `name` is a temporary these writes make
// (".<target>.tmp-<pid>-<random>", left behind only by a writer killed mid-write); else nullopt.
// For a sweep: once no process of that pid runs, the temporary is garbage.
std::optional<pid_t> atomic_write_temporary_writer(std::string_view name);

}  // namespace sealrun
