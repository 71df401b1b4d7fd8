// The bubblewrap command line as data: a pure function of the grant, the host's root layout and
// the descriptor numbers the spawner will use. Unit tests read it; only bwrap.cc executes it.
//
// The job's root is NOT the host's "/" made read-only: that would show it /root, /home, /var, /run
// (sockets, credentials) and every other writable or secret place, merely read-only. Nor does it
// borrow the host's /usr or /etc: the root is an empty tmpfs holding exactly the planned view
// (view_plan.h) — the admitted mounts (each bound from a descriptor opened by the controller),
// the closure's files and links, a fresh /proc, a minimal /dev, a private /tmp — and then "/"
// itself remounted read-only so the job cannot even create files at the top level.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "containment/grant.h"

namespace sealrun {

struct BwrapFds {
  int json_status = -1;            // --json-status-fd (child pid, exit code)
  int seccomp = -1;                // --seccomp (compiled policy); -1 leaves it out
  std::vector<int> mount_sources;  // one per grant.spec.mounts entry, same order (O_PATH fds)
  // Or, instead of descriptors: staged paths, one per mount (see bwrap_launch.cc for why).
  std::vector<std::string> staged_sources;
  int block = -1;  // --block-fd: hold the set-up sandbox until a byte arrives (-1: no gate)
  // The generated files of the view (job_etc.h), each (job path, descriptor number) for
  // --ro-bind-data; a generated entry without one is bound from its host path.
  std::vector<std::pair<std::string, int>> generated;
  // Where the closure files' image is staged (spec.closure_image_fd): each closure file is bound
  // from this directory plus its job path. Empty: bound from its host path.
  std::string closure_stage;
};

// The complete argv, bwrap path first, then the options, then "--" and the job's argv.
std::vector<std::string> build_bwrap_argv(const std::string& bwrap_path, const Grant& grant,
                                          const BwrapFds& fds);

}  // namespace sealrun
