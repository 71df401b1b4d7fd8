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

struct MountSpec {
  enum class Access { kReadOnly, kWritable };
  std::string source;  // host path (absolute)
  std::string target;  // path inside the job (absolute)
  Access access = Access::kReadOnly;
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
  std::optional<ImageRef> image;

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
};

Status validate_spec(const ContainmentSpec& spec);

// The system paths that can never be (or contain) a writable mount target, for docs and probe.
std::vector<std::string_view> reserved_mount_targets();

}  // namespace sealrun
