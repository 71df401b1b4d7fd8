// SPDX-License-Identifier: Apache-2.0
// The run's own identity, from taking it to handing over (docs/containment.md, "Each run's own
// uid"): the run's uid and gid are taken before anything is given to the job (stage 3), and given
// back only once the run's cleanup is confirmed; before that, what the job left in
// results/<id>/out is handed over — owned by the invoking user, with no set-id bit and no write
// for group or others — so that nothing a job made is owned by, writable by or executable as
// anyone but that user. `sweep` does the same for a killed run.
//
// The handover, for every entry of the tree (the root included), never following a link:
//   - owner and group become the controller's real uid and gid (root by default), links included;
//   - the mode keeps only rwxr-xr-x (mode & 0755): set-uid, set-gid, sticky, group write and
//     others' write are removed; links have no mode of their own;
//   - POSIX ACLs (system.posix_acl_access, system.posix_acl_default) are removed, so no entry of
//     one still grants anyone write.
// Directories are handed over before what is in them is, so that nobody else can change their
// entries meanwhile. It is a function over the final tree alone, wherever /out lived during the
// run.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "containment/grant_journal.h"
#include "containment/job_ids.h"
#include "controller/common/state_dir.h"
#include "core/job_user.h"
#include "core/result.h"
#include "core/sweep_step.h"

namespace sealrun::run {

struct RunContext;

struct HandoverCounts {
  uint64_t entries = 0;         // every entry seen, the root included
  uint64_t owner_changed = 0;   // entries whose owner or group was another
  uint64_t set_id_cleared = 0;  // entries that had a set-uid or set-gid bit
  uint64_t write_cleared = 0;   // entries that had group or others' write (or the sticky bit)
};

// Hands the tree at `dir` (below the held state directory) over to `uid`:`gid` as above. A tree
// that is absent is nothing to do (zero counts).
Result<HandoverCounts> hand_over_tree(const StateDir& state, const std::string& dir, uid_t uid,
                                      gid_t gid);

// Stage 3, when the controller is root: takes the run's own ids for `user` (the job user) and
// returns the identity the job's directories are given to (the job user's name, the run's ids);
// otherwise `user` itself. The ids are kept in run.job_ids.
Result<JobUser> take_job_ids(RunContext& run, const JobUser& user);
// The cleanup stage: hands results/<id>/out over (a cleanup action of the receipt).
void hand_over_outputs(RunContext& run);
// The cleanup stage, once everything else is confirmed: gives the run's ids back (refused while a
// process still has them).
Status give_back_job_ids(RunContext& run);

// `sweep`, for a killed run whose leftovers are gone: hands its results/<id>/out over and gives
// its ids back. Empty when the record names no ids. (Outputs no receipt vouches for are removed
// before, sweep_outputs.h: what is handed over is then the empty out/, or a receipted run's.)
std::vector<SweepStep> sweep_job_ids(const StateDir& state, const GrantRecord& record,
                                     const JobIdPool& pool);

}  // namespace sealrun::run
