// SPDX-License-Identifier: Apache-2.0
// The owned space as a file system of its own (docs/growth.md): a
// sparse ext4 image sized to owned_max_bytes with owned_max_inodes inodes for the job, attached to
// a loop device and mounted (nosuid, nodev) over the run's owned root. A write past the limit fails
// with ENOSPC instead of landing on the host disk; a census sample is one statfs; removal is one
// unmount. Like a resource group it is a resource of the run: recorded before it is created (so
// `sweep` finds it from the moment it exists), removed step by step with each step reported, and
// swept after a killed controller only when the record, the image's inode and the loop device's
// backing file all agree that it is this run's.
//
// Where it lives: STATE/ownedfs/<id>.json (the record) and STATE/ownedfs/<id>.img (the image),
// beside — never inside — the space it bounds; the mount point is STATE/owned/<id>.
//
// The pipeline's order: claim_run_dirs (mkdir owned/<id> + marker) → probe_ownedfs → (available)
// create_owned_fs over owned/<id> → prepare_job_dirs (scratch/, logs/ now inside the file system)
// → ... job ... → census stopped → remove_owned_fs → remove_owned_root. Where the probe says no,
// the owned root stays a directory and the walking census guards it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/sweep_step.h"

namespace sealrun::ownedfs {

using Step = SweepStep;  // one reported action, as `sealrun sweep` reports them

// Where the host's facilities are looked for: the seam the tests use to see the fallback.
struct Host {
  std::string dev_dir = "/dev";    // loop-control and loopN
  std::string proc_dir = "/proc";  // filesystems, mountinfo, processes holding a busy mount
  std::string sys_dir = "/sys";    // block/loopN/loop/backing_file
  std::string mkfs;                // mkfs.ext4; empty: looked up on PATH and in /sbin, /usr/sbin
};

struct Availability {
  bool available = false;
  std::string why;  // when not: what is missing, for the receipt ("not root (euid 1000)", ...)
};

// Whether an owned file system can be made here: root (CAP_SYS_ADMIN to mount), loop-control,
// ext4 in the kernel, mkfs.ext4. Cheap (no device is touched); the pipeline keeps the walking
// census when it says no, and records `why`.
Availability probe_ownedfs(const Host& host = {});

// The default of limits.owned_max_inodes: about one inode per 8 KiB of owned_max_bytes (ext4's own
// default is one per 16 KiB; build trees hold many small files), at least 1024, rounded down to
// what ext4 allots exactly (whole inode-table blocks per 128 MiB block group, less its 10 reserved
// inodes), so that the default needs no filler inodes: 1,048,566 for the default 8 GiB.
uint64_t default_owned_max_inodes(uint64_t owned_max_bytes);

// Why a file system of its own cannot have this shape (empty when it can): at least 16 MiB (below
// that the file system's own metadata dominates), and at most one inode per 4 KiB block (ext4's
// bound). The pipeline keeps the walking census for such limits and records the reason.
std::string unfit_shape(uint64_t size_bytes, uint64_t inodes);

// The result space (/out) of a run is a second file system of the same kind, named after the run
// with this suffix: record, image and mount point are STATE/ownedfs/<id>+out.{json,img} and
// STATE/owned/<id>+out. '+' is never in a run id, so the name cannot be another run's.
inline constexpr const char* kResultSuffix = "+out";
inline std::string result_fs_id(const std::string& run_id) { return run_id + kResultSuffix; }
// A run id, or a run id with kResultSuffix: what names an owned file system.
bool is_valid_fs_id(const std::string& id);

struct OwnedFsSpec {
  std::string state_dir;    // the run's state directory (made absolute here)
  std::string id;           // the run id (already validated: a plain file name)
  std::string mount_point;  // an existing, empty-but-for-markers directory: STATE/owned/<id>
  uint64_t size_bytes = 0;  // owned_max_bytes: the file system's size, image included
  uint64_t inodes = 0;      // owned_max_inodes: files, directories and links the owned space holds
  uid_t owner_uid = 0;      // the mount root's owner: the job user (passed in, never looked up)
  gid_t owner_gid = 0;
  mode_t root_mode = 0700;
  // When not empty: the job's part is this directory at the root (owner_uid's, root_mode), which
  // counts as its root in `inodes`; the root itself stays root's (0711), and what the job must not
  // see (the filler inodes) stays beside it; lost+found is removed (the root takes its place among
  // the inodes not counted). The result space's /out (and /src).
  std::string job_dir;
  // Written at the new root as a root-owned 0600 file (the owned root's marker, so that what
  // checks the marker finds it on the mounted root too). Empty name: none.
  std::string marker_name;
  std::string marker_text;
  Host host;
};

// What was made; the pipeline records these in the grant journal and the receipt.
struct OwnedFs {
  std::string id;
  std::string mount_point;
  std::string image_path;   // STATE/ownedfs/<id>.img
  std::string record_path;  // STATE/ownedfs/<id>.json
  std::string loop_device;  // /dev/loopN
  dev_t device = 0;         // st_dev of the mounted root: CensusConfig::owned_dev check
  uint64_t size_bytes = 0;  // the file system's size (the image's apparent size)
  uint64_t inodes = 0;      // inodes the owned space can hold (its root and marker included)
  // Inodes in use on the file system that are not the owned space's (ext4's reserved inodes and
  // the filler that makes the inode bound exact): the census subtracts them from statfs's figure.
  uint64_t reserved_inodes = 0;
  bool direct_io = false;  // the loop device reads and writes the image with O_DIRECT
  int64_t create_ms = 0;   // record to mounted, all included
  std::string made_by;     // "template <key>" or "mkfs.ext4 (...)": template.h
};

// Records, creates, formats, attaches, prepares and mounts the file system over
// spec.mount_point. The job user sees it (and can write) only once it is complete: it is prepared
// detached (fsmount) and attached with one move_mount. On failure everything made is removed again
// (the error says if that failed too); nothing is half made.
Result<OwnedFs> create_owned_fs(const OwnedFsSpec& spec);

// Unmounts (retrying a busy mount for `busy_wait_ms`, then naming the processes that hold it and
// detaching lazily as a last resort), confirms the loop device released the image, unlinks the
// image and the record. Each step is reported; `left` marks what could not be confirmed gone (the
// record is then kept, so `sweep` finishes the job once the holders are gone).
std::vector<Step> remove_owned_fs(const OwnedFs& fs, int64_t busy_wait_ms = 1000,
                                  const Host& host = {});

// Finds the owned file systems of dead controllers under STATE/ownedfs and removes them, each step
// reported. A record whose controller is alive is not touched; a mount, loop device or image is
// touched only when the image's inode is the one the loop device is bound to and the mount's
// device is that loop device; an image without a record is reported, never removed.
std::vector<Step> sweep_owned_fs(const std::string& state_dir, const Host& host = {});

// The same for one run's record only. `sweep` calls it for a run whose grant record says its
// controller is dead, once its processes are stopped (what they kept open in the file system, e.g.
// podman's pause process, would hold it) and before its owned root is removed. The ownedfs record
// is not fsync'd (create.cc): when a power failure took it (missing or unreadable) but the run's
// image is there, the grant record vouches for the id and the image is torn down all the same,
// with the same proofs (the mount point and image path derived from the state directory and the
// id, the mount touched only when it is a loop device bound to that image). Neither record nor
// image: nothing is reported.
std::vector<Step> sweep_owned_fs_of_run(const std::string& state_dir, const std::string& id,
                                        const Host& host = {});

}  // namespace sealrun::ownedfs
