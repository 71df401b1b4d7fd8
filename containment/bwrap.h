// SPDX-License-Identifier: Apache-2.0
// The bubblewrap mechanism: rootless bwrap (run as the unprivileged job user when the controller is
// root, directly otherwise) with every namespace unshared, an empty network, a read-only minimal
// root, the admitted mounts bound from controller-opened descriptors, no capabilities, no new
// privileges and the seccomp policy. It enforces filesystem, process_tree, wall_clock, network,
// syscalls and capabilities; memory and process_count come from a resource group.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "containment/mechanism.h"
#include "core/job_user.h"

namespace sealrun {

struct BwrapOptions {
  // The bwrap binary; empty: look "bwrap" up on PATH. A path that does not exist makes the
  // mechanism unavailable (ACCEPTANCE 22 uses that).
  std::string bwrap_path;
  // The unprivileged user to run as when the controller is root (the controller passes the
  // configured name in).
  std::string job_user = kDefaultJobUser;
  // Where the probe reads the user-namespace switches (user/max_user_namespaces,
  // kernel/unprivileged_userns_clone); a seam for tests.
  std::string proc_sys = "/proc/sys";
  // How long the probe's throwaway sandbox may take.
  int64_t probe_timeout_ms = 20000;
  // Where the probe's findings are cached (bwrap_probe_cache.h); empty: probe every time.
  std::string probe_cache_dir;
};

class BwrapMechanism : public Mechanism {
 public:
  explicit BwrapMechanism(BwrapOptions options);
  MechanismKind kind() const override { return MechanismKind::kBwrap; }
  // Finds bwrap, reads its version, checks user namespaces, then starts a throwaway sandbox and
  // reads back what it really got. Run once per mechanism object; later calls return that result.
  MechanismProbe probe() override;
  std::vector<SweepStep> sweep_leftovers(const LeftoverRun& run) override;
  // The job's generated /etc files (containment/job_etc.h), for the job user as it is resolved.
  Result<std::vector<ViewEntry>> own_view_entries(const ContainmentSpec& spec) override;
  // The view is bound into an empty tmpfs (the default root); an admitted image is unpacked for
  // it, pins can come from images, and it has a sandbox-ready moment (bwrap's --info-fd).
  bool unpacks_image() const override { return true; }
  bool serves_pins_from_images() const override { return true; }
  bool has_sandbox_ready_hook() const override { return true; }

 protected:
  Result<std::unique_ptr<ContainedJob>> start(const Grant& grant, resgroup::ResourceGroup* group,
                                              const JobIo& io) override;

 private:
  MechanismProbe run_probe();
  // The throwaway sandbox itself (run_probe() without the cache).
  MechanismProbe probe_by_sandbox(MechanismProbe p, const std::optional<JobUser>& run_as);
  BwrapOptions options_;
  std::mutex mu_;
  std::optional<MechanismProbe> last_probe_;
};

std::unique_ptr<Mechanism> make_bwrap_mechanism(BwrapOptions options = {});

}  // namespace sealrun
