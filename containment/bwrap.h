// The bubblewrap mechanism: rootless bwrap (run as the unprivileged job user when the controller is
// root, directly otherwise) with every namespace unshared, an empty network, a read-only minimal
// root, the admitted mounts bound from controller-opened descriptors, no capabilities, no new
// privileges and the seccomp policy. It enforces filesystem, process_tree, wall_clock, network,
// syscalls and capabilities; memory and process_count come from a resource group.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "containment/mechanism.h"

namespace sealrun {

struct BwrapOptions {
  // The bwrap binary; empty: look "bwrap" up on PATH. A path that does not exist makes the
  // mechanism unavailable (ACCEPTANCE 22 uses that).
  std::string bwrap_path;
  // The unprivileged user to run as when the controller is root; empty: job_user_name().
  std::string job_user;
  // Where the probe reads the user-namespace switches (user/max_user_namespaces,
  // kernel/unprivileged_userns_clone); a seam for tests.
  std::string proc_sys = "/proc/sys";
  // How long the probe's throwaway sandbox may take.
  int64_t probe_timeout_ms = 20000;
};

class BwrapMechanism : public Mechanism {
 public:
  explicit BwrapMechanism(BwrapOptions options);
  std::string_view name() const override { return "bwrap"; }
  // Finds bwrap, reads its version, checks user namespaces, then starts a throwaway sandbox and
  // reads back what it really got. The result is cached for spawn()'s re-check.
  MechanismProbe probe() override;
  Result<std::unique_ptr<ContainedJob>> spawn(const Grant& grant, resgroup::ResourceGroup* group,
                                              const JobIo& io) override;

 private:
  BwrapOptions options_;
  std::optional<MechanismProbe> last_probe_;
};

std::unique_ptr<Mechanism> make_bwrap_mechanism(BwrapOptions options = {});

}  // namespace sealrun
