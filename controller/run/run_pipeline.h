// SPDX-License-Identifier: Apache-2.0
// `sealrun run`: docs/contract.md's pipeline, one stage per step — (1) read the admission and check
// its digest, (2) verify every pin, (3) claim fresh owned roots, (4) acquire a containment grant,
// (5) put the job's resource group in place with its limits read back, (6) prepare the growth
// census, (7) run the job contained, (8) post-run checks (toolchain, outputs, logs) — and (9) a
// cleanup that always runs (stop the census, stop and remove the job's processes and container,
// confirm the stop, read the final memory figures) and a receipt that is always written
// atomically. The mechanism and resource-group factories are injected (PipelineDeps), so a unit
// test drives the same stages with fakes.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "containment/mechanism_registry.h"
#include "containment/ownedfs/ownedfs.h"
#include "containment/resgroup/resource_group.h"
#include "containment/spec.h"
#include "controller/receipt/receipt.h"
#include "controller/run/variations.h"
#include "core/mechanism_kind.h"

namespace sealrun::run {

// A learning run (`admit freeze --learn`), or its proving run (no host trees, a tracer): host
// trees shown to the job read-only besides its pins
// (bound under the admitted mounts, so a pinned toolchain still covers its part of /usr), and a
// hook called once the sandbox is set up, before the command starts (JobIo::on_sandbox_ready), and
// one when the job has ended.
// Learning needs bwrap: the pipeline asks for no other mechanism.
struct LearningRun {
  std::vector<std::string> host_trees;  // real directories, e.g. /usr /etc; same path in the job
  std::function<Status(pid_t sandbox_pid)> on_sandbox_ready;
  // Called once the job has ended (or could not be waited for), before anything is cleaned up:
  // whatever holds on to the sandbox's mounts lets go here, or the owned space stays busy.
  std::function<void()> on_job_end;
  // System calls that stop the job for the tracer on_sandbox_ready attaches (JobIo).
  std::vector<SyscallTrace> traced_syscalls;
};

struct RunRequest {
  std::string admission_path;
  std::string sha256;
  std::string id;
  MechanismChoice mechanism;  // nullopt: auto
  GrantMode mode = GrantMode::kEnforcing;
  std::string state_dir = "sealrun-state";
  std::string signing_key;  // "": STATE/keys/sealrun.key if it exists, else unsigned
  bool rehash = false;      // `--rehash`: pinned trees are hashed in full, not from the cache
  // Bind the pins live from the host even where pin images could serve them (run_pin_images.h):
  // for tests of the live path's own checks; no command-line option sets it.
  bool pins_live = false;
  // Where the job's output is shown as it arrives, `job| `-prefixed (live_output.h); -1: nowhere.
  int live_output_fd = -1;
  // `sealrun rebuild`: what to vary (variations.h), and the receipt's `rebuild_of` (null else).
  Variations vary;
  nlohmann::json rebuild_of;
  std::optional<LearningRun> learning;
};

struct RunOutcome {
  int exit_code = 0;         // docs/contract.md, exit codes
  std::string receipt_path;  // empty when no receipt could be written (e.g. the id was taken)
  receipt::Receipt receipt;
  std::string message;  // for stderr when something went wrong outside the receipt
};

// What the pipeline makes its effects with. default_pipeline_deps() is the real thing.
struct PipelineDeps {
  MechanismContext mechanism_context;
  std::function<Result<std::unique_ptr<Mechanism>>(MechanismKind, const MechanismContext&)>
      make_mechanism;
  std::function<std::vector<resgroup::BackendProbe>()> probe_groups;
  // Given what probe_groups() answered for this run's grant (no second probe).
  std::function<Result<std::unique_ptr<resgroup::ResourceGroup>>(
      const std::string& run_id, const resgroup::GroupLimits&,
      const std::vector<resgroup::BackendProbe>& probes)>
      make_group;
  // Whether the owned space can be a file system of its own here; unset: it stays a directory.
  std::function<ownedfs::Availability()> probe_owned_fs;
};
PipelineDeps default_pipeline_deps(const MechanismContext& context);

RunOutcome run_pipeline(const RunRequest& request, const PipelineDeps& deps);

}  // namespace sealrun::run
