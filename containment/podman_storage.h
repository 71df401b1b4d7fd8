// SPDX-License-Identifier: Apache-2.0
// The run's podman storage on disk and the job user's access to what the job mounts. Rootless
// podman runs as the unprivileged job user, so everything it touches must be reachable by that
// user: its storage is created below the run's owned root (0700, chowned to the job user), and the
// repository or state directory may live where that user cannot read (e.g. under /root in CI).
// Each mount source's root is therefore checked *as the job user* (find -readable/-writable,
// i.e. access(2) with that user's ids; below the root the job sees what the job user may see, as
// under bwrap) and, when the check fails:
//   - read-only mounts are staged: copied as root into <owned_root>/podman/stage/<n> and chowned
//     to the job user (the copy is counted by the census and removed with the storage);
//   - writable mounts are chowned to the job user, but only when sealrun can show it owns them: the
//     source lies below the run's owned root, or is an empty directory made for the run; anything
//     else is refused with a message naming the mount.
// Decisions are a pure function (decide_mount_action) so the rules are unit-tested as data.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "containment/podman_argv.h"
#include "containment/podman_runner.h"
#include "containment/spec.h"
#include "core/result.h"

namespace sealrun::podman {

enum class MountAction { kBindAsIs, kStageCopy, kChownToJobUser, kRefuse };

struct MountFacts {
  bool accessible_to_job_user = false;  // readable (and writable, for writable mounts) all through
  bool under_owned_root = false;
  bool empty_directory = false;
  bool controller_is_root = false;
};
MountAction decide_mount_action(const MountSpec& mount, const MountFacts& facts);

// True when `path` lies strictly below `root` (both normalised absolute paths).
bool path_is_below(const std::string& path, const std::string& root);

// Creates the layout's directories (new, 0700) and hands them to the job user. Then checks, as
// the job user, that it can reach them: an owned root below a directory the job user cannot
// search is refused with what to do about it.
Status prepare_storage(const StorageLayout& layout, const JobUser& user);

// Writes the OCI seccomp profile (0600, job user's) where run_argv() points podman.
Status write_seccomp_profile(const StorageLayout& layout, const JobUser& user,
                             const std::string& profile_json);

// The archive path podman should load: the verified archive itself when the job user can read it,
// else a copy made as root into the storage. `actions` receives what was done.
Result<std::string> accessible_image_archive(const StorageLayout& layout, const JobUser& user,
                                             const std::string& archive,
                                             std::vector<std::string>& actions);

// What `podman pull` should read the (verified, accessible) archive from, with exactly one
// transport: an OCI archive is unpacked as the job user into layout.image_dir and read as
// "oci:image" — relative, so `podman pull` must run in layout.base: podman names the image after
// the path, and refuses one with capitals — (podman unpacks OCI archives into /var/tmp whatever it
// is told, where a killed run would leave them); a docker archive is read in place as
// "docker-archive:FILE".
Result<std::string> image_source(const JobUser& user, const StorageLayout& layout,
                                 const std::string& archive, int64_t timeout_ms);

// (Re)creates the storage's runroot link in its checked link directory.
Status ensure_runroot_link(const StorageLayout& layout, const JobUser& user);

// Applies decide_mount_action() to each mount; returns the mounts podman should bind.
Result<std::vector<MountSpec>> prepare_mounts(const ContainmentSpec& spec,
                                              const StorageLayout& layout, const JobUser& user,
                                              std::vector<std::string>& actions);

// Removes the storage: `podman unshare rm -rf` for files owned by subordinate ids; the processes
// still running from it (its pause process, and any podman, conmon or watchdog of the job user
// with its XDG_RUNTIME_DIR that started no earlier than `not_before`, a /proc starttime — the
// controller's); its runroot link; then the rest. Each action is reported; failures are reported
// and returned as the error.
Status remove_storage(const StorageLayout& layout, const JobUser& user, const HostFacts& facts,
                      const std::string& not_before, std::vector<std::string>& actions);

// Kills the storage's rootless pause process (from its pid file) and every other process of the
// job user running with the storage's XDG_RUNTIME_DIR that started no earlier than `not_before`,
// each through a pidfd opened before the checks; each reported.
void stop_storage_processes(const StorageLayout& layout, const JobUser& user,
                            const std::string& not_before, std::vector<std::string>& actions);

// For sweep: removes the links in `link_dir` whose target is gone (a killed run's or probe's
// runroot link, once its storage was removed), then the directory if it is empty.
// Removes the storage's runroot link (only if it points at this storage), then the link
// directory if that is now empty; what was done (or why not) is added to `actions`.
void remove_runroot_link(const StorageLayout& layout, std::vector<std::string>& actions);

// The owned root of a storage whose run root is `run_root` (storage_layout()), or nullopt when
// `run_root` is not shaped like one.
std::optional<std::string> owned_root_of_run_root(const std::string& run_root);

std::vector<std::string> sweep_dangling_links(const std::string& link_dir);

}  // namespace sealrun::podman
