// SPDX-License-Identifier: Apache-2.0
// ContainmentSpec: what a caller asks containment to do, as plain data. validate_spec() rejects
// anything malformed before a mechanism ever sees it (unknown dimensions cannot be represented;
// a required dimension must also be requested; limits positive; env strings clean; mount targets
// absolute, normalised, and never a reserved system path as a writable target).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dimension.h"
#include "core/result.h"

namespace sealrun {

enum class GrantMode { kEnforcing, kReportOnly };

// What one entry of the job's view is (docs/view.md):
// where its bytes come from. The receipt's view[] spells these names (view_kind_name).
enum class ViewKind {
  kSource,
  kToolchain,
  kTree,
  kImage,
  kClosure,
  kOut,
  kScratch,
  kTmp,
  kProc,
  kDev,
  kLink,
  // Podman's own (docs/view.md): the read-only sysfs it mounts (kernel-made, like /proc), files
  // that would otherwise be podman's generated ones, written by sealrun from the spec and pinned
  // by their SHA-256 (/etc/hostname, /run/.containerenv), and its --init binary (the host's
  // catatonit at /run/podman-init, pinned by the SHA-256 it had when the view was planned).
  kSys,
  kGenerated,
  kInit,
  // A directory that exists in the view without a mount (a learned closure's host_dirs: the job
  // looked it up or listed it); empty but for what else the view places below it. bwrap only.
  kDir,
};
std::string_view view_kind_name(ViewKind kind);

struct MountSpec {
  enum class Access { kReadOnly, kWritable };
  std::string source;  // host path (absolute)
  std::string target;  // path inside the job (absolute)
  Access access = Access::kReadOnly;
  ViewKind kind = ViewKind::kTree;
  // What pins the bytes ("sha256:<hex>" of a tree or manifest); empty for a writable place.
  std::string pin;
  // Served from a verified read-only image (docs/view.md, "How pinned bytes are served"): the
  // image file, opened read-only and held by the run, and this entry's directory inside it ("":
  // its root). -1: bound live from `source`.
  int image_fd = -1;
  std::string image_subpath;
};

// One entry of the job's view, as planned (view_plan.h) and as the receipt records it.
struct ViewEntry {
  std::string job_path;
  ViewKind kind = ViewKind::kTree;
  std::string host_path;  // where the bytes come from; empty for tmp, proc, dev and links
  std::string pin;        // what pins them; empty only for writable and kernel-made entries
  bool writable = false;
  std::string link_target;  // kLink: the symlink's text ("usr/bin")
  int mount_index = -1;     // the ContainmentSpec::mounts entry it is (not recorded)
  // How host bytes reach the job (docs/view.md): "image" (a verified read-only image), "copy" (a
  // private copy: the source snapshot, generated files) or "live" (bound from the host path);
  // empty where no host bytes are bound (kernel-made, writable, links, directories).
  std::string served;
};

// The image a mechanism that runs containers uses (podman); bwrap ignores it.
struct ImageRef {
  std::string archive_path;  // verified archive to load
  std::string image_id;      // "sha256:<hex>", the verified config digest
};

struct ContainmentSpec {
  std::string run_id;      // [A-Za-z0-9._-]{1,64}
  std::string owned_root;  // the run's owned root: mechanisms keep their state below it
  std::vector<std::string> argv;
  std::string cwd = "/src";
  std::map<std::string, std::string> env;  // the complete job environment
  std::vector<MountSpec> mounts;
  // Single host files bound read-only (kClosure, a learned closure's host_files) and symlinks
  // (kLink: the closure's host_links and a merged-/usr host's compatibility links), each already
  // verified or derived from what is pinned, and what a mechanism adds itself
  // (Mechanism::own_view_entries: kGenerated, kInit). Planned into the view after the mounts.
  std::vector<ViewEntry> files_and_links;
  std::optional<ImageRef> image;
  // The closure files' image (each file at its job path inside it; held open by the run), or -1:
  // the closure files are bound live from the host (docs/view.md).
  int closure_image_fd = -1;

  DimensionSet requested;
  DimensionSet required;
  GrantMode mode = GrantMode::kEnforcing;

  uint64_t memory_high_bytes = 7ULL << 30;
  uint64_t memory_max_bytes = 8ULL << 30;
  uint64_t swap_max_bytes = 0;
  uint64_t pids_max = 4096;
  int64_t wall_clock_ms = 1500 * 1000;
  int64_t stop_grace_ms = 5000;  // TERM -> KILL

  // The job's small world, which `sealrun rebuild --vary` changes (docs/rebuild.md): the hostname
  // in its UTS namespace, its umask (nullopt: bwrap inherits the controller's, podman sets 0022),
  // and its uid/gid inside its user namespace (bwrap --uid/--gid; nullopt: the job user's own).
  std::string hostname = "sealrun";
  std::optional<uint32_t> umask;
  std::optional<uint32_t> uid_in_job;
  // Also varied by a rebuild: the NIS domain name of the job's UTS namespace (empty: inherited from
  // the controller's; set only where the controller is root) and the personality(2) flags of the
  // process that starts the mechanism (UNAME26, ADDR_NO_RANDOMIZE), which the job inherits through
  // every exec that is not set-id (nullopt: the controller's).
  std::string domainname;
  std::optional<unsigned long> personality;
  // The host ids this run's job runs as: a uid and gid of its own (job_ids.h), when the controller
  // is root; nullopt: the job user's (or the caller's). Inside, under bwrap, the job still sees
  // the job user's own ids (in_job_uid/gid); podman runs it with --user podman_user.
  struct HostIds {
    uint32_t uid = 0, gid = 0;
    uint32_t podman_user = 0;
    uint32_t in_job_uid = 0, in_job_gid = 0;
  };
  std::optional<HostIds> job_ids;
};

Status validate_spec(const ContainmentSpec& spec);

// The system paths that can never be (or contain) a writable mount target, for docs and probe.
std::vector<std::string_view> reserved_mount_targets();

}  // namespace sealrun
