// SPDX-License-Identifier: Apache-2.0
// A cache of the bwrap probe's findings (BwrapMechanism::run_probe), so that a run does not start a
// throwaway sandbox to learn again what this host's bwrap enforces. An entry is used only when
// everything the findings depend on is the same as when they were made:
//   the bwrap binary's bytes (SHA-256 of the file, hashed at every use: ~70 KiB),
//   the kernel release and the boot id (/proc/sys/kernel/random/boot_id: never across a boot),
//   the identity the sandbox maps (the job user's uid and gid),
//   the user-namespace switches, the job seccomp policy's BPF bytes, and sealrun's version
//   (what the probe checks is ours).
// The entry lives under the state directory (probe-cache/bwrap.json), root's (the controller's
// euid), mode 0600 in a 0700 directory, and carries the SHA-256 of its own contents: one that is
// not ours, not private, unreadable, corrupt or for another key is ignored with the reason, the
// probe runs again and the entry is rewritten. Only an available probe is stored. The run's
// receipt records the use (grant.probe: cached or not, the key, the reason).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "containment/mechanism.h"
#include "core/job_user.h"
#include "core/result.h"

namespace sealrun::bwrap_internal {

struct ProbeCacheKey {
  std::string bwrap_path;
  std::string bwrap_sha256;
  std::string kernel_release;
  std::string boot_id;
  std::string id_maps;         // "uid 1001 gid 1001": the identity the sandbox maps
  std::string userns_sysctls;  // max_user_namespaces and unprivileged_userns_clone as read
  std::string seccomp_sha256;  // the job policy's BPF program
  std::string sealrun_version;
  nlohmann::json to_json() const;
  std::string digest() const;  // SHA-256 of to_json().dump(): the key the receipt names
};

// The key for this host now. `proc` is where boot_id and sys/ are read (a test seam).
Result<ProbeCacheKey> probe_cache_key(const std::string& bwrap_path,
                                      const std::optional<JobUser>& run_as,
                                      const std::string& proc_sys);

// The entry in `dir` for `key`, or nullopt with why it was not used in `why` ("no entry", "written
// in another boot", "the bwrap binary changed", "corrupt: ...").
std::optional<MechanismProbe> load_cached_probe(const std::string& dir, const ProbeCacheKey& key,
                                                std::string* why);

// Writes the entry for `key` (atomically; the directory is made 0700 when missing).
Status store_cached_probe(const std::string& dir, const ProbeCacheKey& key,
                          const MechanismProbe& probe);

// The entry's file name in the cache directory.
inline constexpr const char* kProbeCacheFile = "bwrap.json";

}  // namespace sealrun::bwrap_internal
