// SPDX-License-Identifier: Apache-2.0
// The sandbox `rebuild --explain` runs diffoscope in (docs/rebuild.md, "--explain"). diffoscope is
// a large parser of many hostile formats (it unpacks archives, runs binutils, reads ELF and PDF)
// and its inputs are files a job made, so it runs under sealrun's own containment, as a run's job
// does: a bwrap grant (its own namespaces, no network, no capabilities, the seccomp policy, as the
// unprivileged job user), a resource group with memory and process limits, and a wall-clock bound.
// Its view is the host's /usr (read-only), a private /tmp, the generated /etc files, and copies
// of the two files it compares, read-only at /explain/a/NAME and /explain/b/NAME; neither run's
// out/, the state directory nor anything else of the host is in it. The report is read from a
// file the controller opened, at most `report_bytes` of it.
#pragma once

#include <cstdint>
#include <string>

#include "containment/mechanism_registry.h"
#include "core/result.h"

namespace sealrun::run {

struct SandboxLimits {
  uint64_t memory_max_bytes = 2ULL << 30;
  uint64_t pids_max = 256;
  int64_t wall_clock_ms = 120 * 1000;
  size_t report_bytes = 64 * 1024;
};

// What diffoscope said about the pair (its exit code 1, "they differ", is a report too).
// `program`: the diffoscope to run (under /usr, or any other file, which is then bound read-only
// at its own path). `fa` and `fb`: the two files, opened by the caller without following links;
// `name`: the output's path (its last component names the copies: diffoscope tells formats apart
// partly by name). The scratch directory is made under $TMPDIR (the rebuild's controller
// temporaries, which `sealrun sweep` finds) and removed.
Result<std::string> contained_diffoscope(const MechanismContext& context,
                                         const std::string& program, int fa, int fb,
                                         const std::string& name, const SandboxLimits& limits = {});

}  // namespace sealrun::run
