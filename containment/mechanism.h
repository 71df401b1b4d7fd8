// SPDX-License-Identifier: Apache-2.0
// A containment mechanism (bubblewrap, rootless podman, or a fake in tests) and its lifecycle
// verbs, each owned end to end by the mechanism, in the spirit of nsjail's one file per concern
// with shared verbs:
//   probe()            what it can enforce here, found by trying (cached after the first call);
//   spawn()            start a job under a grant — non-virtual: the common grant re-check
//                      (recheck_grant) always runs first, then the mechanism's own start();
//   ContainedJob       wait (with the wall-clock limit), stop (TERM, grace, KILL), cleanup;
//   journal_locators() what `sweep` needs to find the run's leftovers, recorded before spawn;
//   sweep_leftovers()  remove what a killed controller left, from those recorded locators;
//   sweep_strays()     remove what a killed controller left before it could record anything
//                      (in its temporaries under the state directory, or short links).
// What differs between mechanisms in how a run is prepared is asked of the mechanism too (its view
// root, whether an admitted image is unpacked for it, whether pins are served from images,
// whether it has a sandbox-ready moment), so the controller and `sweep` never name a mechanism:
// they go through these methods and mechanism_registry.h.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "containment/seccomp_policy.h"
#include "core/dimension.h"
#include "core/mechanism_kind.h"
#include "core/process.h"
#include "core/result.h"
#include "core/sweep_step.h"

namespace sealrun {

namespace resgroup {
class ResourceGroup;
}
struct Grant;
struct ContainmentSpec;
struct ViewEntry;
enum class ViewRoot;  // containment/view_plan.h

struct DimensionCheck {
  Dimension dimension;
  bool enforceable = false;
  std::string why;  // how it was verified, or why it cannot be enforced here
};

// How a probe's findings were come by when the mechanism keeps a cache of them (bwrap: see
// containment/bwrap_probe_cache.h): from the cache, or probed (and why the cache was not used).
struct ProbeCacheUse {
  bool cached = false;
  std::string key;   // the SHA-256 of the cache key (binary digest, kernel, boot id, id maps, ...)
  std::string note;  // "hit", or why not: "no entry", "written in another boot", "corrupt: ..."
};

struct MechanismProbe {
  std::string name;
  bool available = false;
  std::string path;  // the binary used
  std::string version;
  std::string unavailable_reason;
  std::vector<DimensionCheck> dimensions;
  std::optional<ProbeCacheUse> cache;  // nullopt: this probe has no cache (or none was given)
  DimensionSet enforceable() const;
};

// Where the job's standard streams go (-1: /dev/null).
struct JobIo {
  int stdin_fd = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
  // Called (as the controller) once the sandbox is set up and before the job's command starts,
  // with the pid of a process inside the sandbox (its mounts are under /proc/PID/root); a
  // failure stops the sandbox before the command runs. `admit freeze --learn` marks the
  // sandbox's mounts for fanotify here. Only bwrap supports it; podman refuses a job that sets it.
  std::function<Status(pid_t sandbox_pid)> on_sandbox_ready;
  // System calls that stop the job for a tracer, which on_sandbox_ready must have attached (with
  // PTRACE_O_TRACESECCOMP) to the given pid: a learning or proving run (learn/lookup_tracer.h).
  // Empty for every ordinary run. Only bwrap supports it.
  std::vector<SyscallTrace> traced_syscalls;
};

// A sandbox's exit code read the shell's way: 128 + N (N in 1..64) means the job was killed by
// signal N — bwrap and podman both report a job's death so, and neither passes on more; a job that
// exits 129..192 on purpose is read as that signal (docs/containment.md).
ExitStatus status_from_shell_convention(const ExitStatus& status);

struct JobExit {
  ExitStatus status;
  bool timed_out = false;  // stopped at the wall-clock limit (TERM, grace, KILL)
};

// A running contained job. Destroying it without cleanup() kills and cleans up.
class ContainedJob {
 public:
  virtual ~ContainedJob() = default;
  virtual pid_t pid() const = 0;  // the outermost process sealrun spawned
  // The mechanism's own name for the job, where it has one (podman: the container id).
  virtual std::string container_id() const { return {}; }
  // Waits for the job; at the grant's wall-clock limit it is stopped (TERM, grace, KILL).
  virtual Result<JobExit> wait() = 0;
  // Stops it now (TERM, grace, KILL), e.g. when a guard trips or the controller is signalled.
  virtual Status stop(int64_t grace_ms) = 0;
  // Removes what the mechanism created (podman container and storage); each action reported.
  virtual Result<std::vector<std::string>> cleanup() = 0;
};

// What a grant record says about one run, as far as a mechanism's sweep needs it.
struct LeftoverRun {
  std::string run_id;
  std::string owned_root;
  std::string job_user;  // the configured job user's name when the controller was root, else ""
  std::map<std::string, std::string> locators;  // journal_locators() as recorded
  std::string controller_start;  // the controller's starttime: what it started came later
};

// The short directory for links a mechanism needs at a short path (MechanismContext):
// /tmp/sealrun-links-<euid>, one per user, so that it is the caller's own.
std::string default_short_link_dir();

// A directory of temporaries whose controller is gone (<state>/tmp/<pid>.<start>), for
// sweep_strays(): anything found running from it must have started after `creator_start`.
struct StrayDir {
  std::string path;
  std::string creator_start;  // /proc/<pid>/stat starttime of the controller that made it
};

class Mechanism {
 public:
  virtual ~Mechanism() = default;
  virtual MechanismKind kind() const = 0;
  // The name grants, records and receipts use: the kind's name (test fakes give their own).
  virtual std::string_view name() const { return mechanism_kind_name(kind()); }
  // Must not throw; any failure means unavailable, with the reason. Cached after the first call.
  virtual MechanismProbe probe() = 0;
  // Starts the job under `grant`; `group` (may be null) receives the process before it runs. The
  // grant is re-checked first against this mechanism's probe and the group actually handed in
  // (recheck_grant: a stale, hand-made or widened grant, or an enforcing-mode shortfall, is
  // refused), so no mechanism can skip it.
  Result<std::unique_ptr<ContainedJob>> spawn(const Grant& grant, resgroup::ResourceGroup* group,
                                              const JobIo& io);
  // What `sweep` needs to find this run's leftovers if the controller is killed, written to the
  // grant journal before spawn (e.g. podman: the container name and its storage root).
  virtual std::map<std::string, std::string> journal_locators(const ContainmentSpec& spec) const;
  // What this mechanism itself puts into the job's view besides the planned entries, each with
  // what pins it (podman: its init binary and the files it would otherwise generate; see
  // ViewKind). The controller adds them to the grant's spec.files_and_links before it records the
  // view, and the mechanism's command line binds them from there. Default: nothing.
  virtual Result<std::vector<ViewEntry>> own_view_entries(const ContainmentSpec& spec);
  // Removes what a killed run of this mechanism left, from its recorded locators, checking each
  // against what this mechanism would itself derive for the run (never trusting a record blindly).
  virtual std::vector<SweepStep> sweep_leftovers(const LeftoverRun& run) = 0;
  // Removes what killed controllers left that no grant record names: what this mechanism kept in
  // their temporaries (`dead_dirs`; the directories themselves are the caller's to remove) and
  // links in the context's short link directory whose target is gone. Default: nothing.
  virtual std::vector<SweepStep> sweep_strays(const std::vector<StrayDir>& dead_dirs);

  // What the job's root is (view_plan.h): the admitted image's own root, run by the mechanism
  // (kImage), or an empty tmpfs that every entry of the view is bound into (kEmptyTmpfs, the
  // default). The view the receipt records is planned with it.
  virtual ViewRoot view_root() const;
  // Whether the controller must unpack an admitted image into a verified root file system whose
  // entries join the view (a mechanism that cannot run an image archive itself). Default: no.
  virtual bool unpacks_image() const { return false; }
  // Whether the pinned host trees and closure files may be served to the job from verified
  // read-only images (EROFS on a loop device) instead of bound by path. Default: no.
  virtual bool serves_pins_from_images() const { return false; }
  // Whether JobIo::on_sandbox_ready (and traced_syscalls) is honoured: a moment after the sandbox
  // is set up and before the command runs. Learning and proving runs need it, and so does the
  // check that each closure file bound is the one hashed. Default: no (such a job is refused).
  virtual bool has_sandbox_ready_hook() const { return false; }

 protected:
  virtual Result<std::unique_ptr<ContainedJob>> start(const Grant& grant,
                                                      resgroup::ResourceGroup* group,
                                                      const JobIo& io) = 0;
};

}  // namespace sealrun
