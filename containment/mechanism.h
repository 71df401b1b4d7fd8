// A containment mechanism (bubblewrap, rootless podman, or a fake in tests): it says what it can
// enforce here, found by trying, and starts a job under a grant. Mechanisms are ranked strongest
// first by the caller; acquire_grant() picks the strongest available one.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "containment/dimension.h"
#include "core/process.h"
#include "core/result.h"

namespace sealrun {

namespace resgroup {
class ResourceGroup;
}
struct Grant;

struct DimensionCheck {
  Dimension dimension;
  bool enforceable = false;
  std::string why;  // how it was verified, or why it cannot be enforced here
};

struct MechanismProbe {
  std::string name;
  bool available = false;
  std::string path;     // the binary used
  std::string version;
  std::string unavailable_reason;
  std::vector<DimensionCheck> dimensions;
  DimensionSet enforceable() const;
};

// Where the job's standard streams go (-1: /dev/null).
struct JobIo {
  int stdin_fd = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
};

struct JobExit {
  ExitStatus status;
  bool timed_out = false;  // stopped at the wall-clock limit (TERM, grace, KILL)
};

// A running contained job. Destroying it without finish() kills and cleans up.
class ContainedJob {
 public:
  virtual ~ContainedJob() = default;
  virtual pid_t pid() const = 0;               // the outermost process sealrun spawned
  virtual std::string container_id() const { return {}; }
  // Waits for the job; at the grant's wall-clock limit it is stopped (TERM, grace, KILL).
  virtual Result<JobExit> wait() = 0;
  // Stops it now (TERM, grace, KILL), e.g. when a guard trips or the controller is signalled.
  virtual Status stop(int64_t grace_ms) = 0;
  // Removes what the mechanism created (podman container and storage); each action reported.
  virtual Result<std::vector<std::string>> cleanup() = 0;
};

class Mechanism {
 public:
  virtual ~Mechanism() = default;
  virtual std::string_view name() const = 0;
  // Must not throw; any failure means unavailable, with the reason.
  virtual MechanismProbe probe() = 0;
  // Starts the job under `grant`. `group` (may be null) receives the process before it runs.
  virtual Result<std::unique_ptr<ContainedJob>> spawn(const Grant& grant,
                                                      resgroup::ResourceGroup* group,
                                                      const JobIo& io) = 0;
};

}  // namespace sealrun
