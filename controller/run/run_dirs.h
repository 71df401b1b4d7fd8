// SPDX-License-Identifier: Apache-2.0
// The run's directories: claimed fresh (refusing an id that was used before, ACCEPTANCE 16),
// marked as sealrun's own, handed to the job user where the job must write, and removed at the end
// only after the marker proves they are ours.
#pragma once

#include <string>
#include <vector>

#include "containment/mechanism.h"
#include "controller/common/state_dir.h"
#include "controller/run/run_plan.h"
#include "core/job_user.h"
#include "core/result.h"
#include "core/sweep_step.h"

namespace sealrun::run {

inline constexpr const char* kOwnedMarker = ".sealrun-owned";

// Every function here reaches the state directory through `state` (checked and held, see
// state_dir.h): the RunLayout paths are resolved below it without following any link.

// Whether `id` was used by a run that executed (or may have): results/<id> or owned/<id> exists.
// A refused run (nothing executed) leaves neither, so its id stays free.
Status check_id_unused(const StateDir& state, const RunLayout& layout, const std::string& id);
// Creates <state>/owned and <state>/results if needed, then claims results/<id> and owned/<id>
// with mkdir (which fails if either exists: nothing of an earlier run is touched). The owned root
// is root's (0711: the job user may pass through it to what is its own inside, never rename it).
Status claim_run_dirs(const StateDir& state, const RunLayout& layout, const std::string& id);
// Gives a claimed id back after a run that executed nothing: removes the (marked) owned root and
// the results directory, which then holds only the empty directories the claim made.
Status release_run_claim(const StateDir& state, const RunLayout& layout, const std::string& id);
// Where the receipt of a run that executed nothing goes: <state>/refusals/<id>/<time>-<pid>.json,
// a new file each time (never overwritten), outside results/ so the id stays free.
Result<std::string> refusal_receipt_path(const StateDir& state, const std::string& id);

// A verified source export lives outside the owned root, in <state>/exports/<id>.<pid>.<start>/
// (the controller's pid and starttime in the name, so `sweep` can prove its creator dead), made
// before the pins are verified (step 2) and removed at cleanup.
Result<std::string> make_export_dir(const StateDir& state, const std::string& id);
Status remove_export_dir(const StateDir& state, const std::string& path);
// For `sealrun sweep`: export directories whose creator is dead, removed; each reported.
std::vector<SweepStep> sweep_exports(const StateDir& state);

// This controller's temporaries (controller_temp_dir()), made at the start of a run and removed
// at its end.
Status make_temp_dir(const StateDir& state, const std::string& path);
Status remove_temp_dir(const StateDir& state, const std::string& path);
// For `sealrun sweep`: the <state>/tmp/<pid>.<start> directories whose creator is dead, with its
// starttime (what the mechanisms sweep there must have started later). Each is removed with
// remove_temp_dir() once the mechanisms' sweep_strays() have stopped what runs from it.
std::vector<StrayDir> dead_temp_dirs(const StateDir& state);

// Creates scratch/, logs/ and out/; scratch and out belong to the job user when we are root.
Status prepare_job_dirs(const StateDir& state, const RunLayout& layout, const JobUser& job_user);
// Removes owned/<id> after checking its marker names `id`. Never follows symlinks.
Status remove_owned_root(const StateDir& state, const RunLayout& layout, const std::string& id);
// The same for a path taken from a grant record (sweep): `owned_root` must be
// <state_dir>/owned/<id> exactly, or nothing is removed. An owned root whose claim was interrupted
// (no marker yet, or a partial one, and nothing else in it) is removed too.
Status remove_recorded_owned_root(const StateDir& state, const std::string& owned_root,
                                  const std::string& id);
// For `sealrun sweep`: gives back the id of a killed run that left results/<id> holding nothing
// but the empty directories of its claim (no receipt, no output). Anything else is kept.
SweepStep release_empty_results(const StateDir& state, const std::string& id);

}  // namespace sealrun::run
