// Rootless podman's command lines as plain data (docs/style.md D2: "policy is data, effects
// are thin"). Every podman invocation sealrun makes — load, images, run, kill, rm, ps, unshare — is
// built here by pure functions from the grant, the run's storage layout and a few facts about the
// host, so unit tests can read exactly what a job would be started with. Nothing here touches the
// file system or spawns anything; podman.cc and podman_storage.cc apply these values.
#pragma once

#include <string>
#include <vector>

#include "containment/mechanism.h"
#include "containment/spec.h"
#include "core/result.h"

namespace sealrun::podman {

// Where one run's podman keeps its state: everything below <owned_root>/podman, so the census
// counts it and cleanup can remove it whole. Every directory is 0700 and owned by the job user.
struct StorageLayout {
  std::string base;        // <owned_root>/podman
  std::string home;        // base/home: HOME for podman (containers.conf lookups, caches)
  std::string graph_root;  // base/graph: --root (images and container layers, vfs driver)
  std::string run_root;    // base/runroot: the container state (locks, attach sockets)
  // podman refuses a --runroot longer than 50 characters (its sockets must fit sun_path), and an
  // owned root is usually deeper than that: --runroot is this short symlink to run_root instead,
  // "<link_dir>/<FNV-1a 64 of base, hex>", so sweep can recompute it from the owned root. The
  // directory is the controller's (MechanismContext::short_link_dir), never world-writable, and
  // sweep removes the links in it whose target is gone.
  std::string link_dir;
  std::string run_root_link;
  std::string tmp_dir;          // base/tmp: TMPDIR and --tmpdir (libpod's temporary state)
  std::string runtime_dir;      // base/xdg: XDG_RUNTIME_DIR (podman refuses one it does not own)
  std::string stage_dir;        // base/stage: copies of mount sources the job user cannot read
  std::string seccomp_profile;  // base/seccomp.json: the job policy as an OCI profile
  std::string image_copy;       // base/image.tar: the archive, when the job user cannot read it
  std::string image_dir;        // base/image: an OCI archive unpacked (podman pulls it as oci:DIR)
  std::string cidfile;          // base/container.id (--cidfile)
  std::string conmon_pidfile;   // base/conmon.pid (--conmon-pidfile)
};
// `link_dir` empty: default_short_link_dir().
StorageLayout storage_layout(const std::string& owned_root, const std::string& link_dir = {});
// The directories to create, parents first.
std::vector<std::string> storage_dirs(const StorageLayout& layout);

// What the probe learned about podman on this host that changes the command line.
struct HostFacts {
  std::string podman_path = "/usr/bin/podman";
  std::string runtime_path = "runc";  // docs/testbed.md: crun refuses hybrid cgroups
  // Rootless podman honours --pids-limit only on cgroup v2; on v1 it prints "Resource limits are
  // not supported and ignored on cgroups V1 rootless systems", so the flag is left out there and
  // the resource group enforces the pids limit instead.
  bool cgroups_v2 = false;
  // catatonit is installed (podman's --init): PID 1 forwards TERM to the job and reaps orphans.
  // Without it the job is PID 1, ignores TERM unless it handles it, and is KILLed after the grace.
  bool have_init = false;
  std::string init_path;  // where it is (podman 4.3's default init_path), when have_init
};

// The environment podman itself runs with: cleared, then only these (the job's own environment is
// passed with --env, never inherited).
std::vector<std::string> podman_environment(const StorageLayout& layout);

// argv prefix of every podman invocation: the binary and the global storage/runtime flags.
std::vector<std::string> global_args(const StorageLayout& layout, const HostFacts& facts);

std::string container_name(const std::string& run_id);  // "sealrun-<id>"
std::string run_label(const std::string& run_id);       // "sealrun.run=<id>" (sweep filters on it)

// "sha256:<64 hex>" (or bare hex) -> the 64 lowercase hex digits podman accepts as a reference.
Result<std::string> image_hex(const std::string& image_id);

// One bind mount as podman's --mount value. Refuses sources or targets podman's option syntax
// cannot carry (',' or '=' in --mount, ':' is fine there) rather than mis-parse them.
Result<std::string> mount_option(const MountSpec& mount);

// A file podman would otherwise generate in the job (/etc/hostname, /run/.containerenv, with the
// container's id in it), written by sealrun instead from the spec and bound read-only, so its bytes
// are known and pinned by their SHA-256 (view kind `generated`, docs/view.md). Podman leaves out
// its own file where a mount is given at the same path.
struct GeneratedFile {
  std::string job_path;
  std::string host_path;  // <owned_root>/view/<name>: root's, not the job user's like podman's
  std::string bytes;
};
std::vector<GeneratedFile> generated_files(const ContainmentSpec& spec);

// `podman run` for the job. `mounts` are the spec's mounts with sources possibly replaced by staged
// copies (podman_storage.h); the image is named by its verified id, never by a tag.
Result<std::vector<std::string>> run_argv(const ContainmentSpec& spec,
                                          const std::vector<MountSpec>& mounts,
                                          const StorageLayout& layout, const HostFacts& facts,
                                          const std::string& image_id);

std::vector<std::string> load_argv(const StorageLayout& layout, const HostFacts& facts,
                                   const std::string& archive);
// `podman pull` from one named local transport ("oci:DIR" or "docker-archive:FILE"): no registry,
// and no guessing of the format. (`podman load` tries every transport in turn, extracting an OCI
// archive into /var/tmp on the way whatever the configuration says — where a killed run would
// leave it — and reports only the last transport's complaint.)
std::vector<std::string> pull_argv(const StorageLayout& layout, const HostFacts& facts,
                                   const std::string& transport_ref);
// Lists every image id in the run's (fresh) storage, one "sha256:<hex>" per line.
std::vector<std::string> image_ids_argv(const StorageLayout& layout, const HostFacts& facts);
std::vector<std::string> kill_argv(const StorageLayout& layout, const HostFacts& facts,
                                   const std::string& run_id, const std::string& signal);
std::vector<std::string> rm_argv(const StorageLayout& layout, const HostFacts& facts,
                                 const std::string& run_id);
// Every container carrying the run's label, running or not: one id per line.
std::vector<std::string> ps_argv(const StorageLayout& layout, const HostFacts& facts,
                                 const std::string& run_id);
// The container's main process as seen from the host ("0" once it has exited).
std::vector<std::string> inspect_pid_argv(const StorageLayout& layout, const HostFacts& facts,
                                          const std::string& run_id);
// Removes paths from inside the job user's user namespace, where files owned by subordinate ids
// (written by the container's non-root users) are removable.
std::vector<std::string> unshare_rm_argv(const StorageLayout& layout, const HostFacts& facts,
                                         const std::vector<std::string>& paths);

}  // namespace sealrun::podman
