// The run's directories: claimed fresh (refusing an id that was used before, ACCEPTANCE 16),
// marked as sealrun's own, handed to the job user where the job must write, and removed at the end
// only after the marker proves they are ours.
#pragma once

#include <string>
#include <vector>

#include "controller/run_plan.h"
#include "core/job_user.h"
#include "core/result.h"
#include "core/sweep_step.h"

namespace sealrun::run {

inline constexpr const char* kOwnedMarker = ".sealrun-owned";

// Whether `id` was used by a run that executed (or may have): results/<id> or owned/<id> exists.
// A refused run (nothing executed) leaves neither, so its id stays free.
Status check_id_unused(const RunLayout& layout, const std::string& id);
// Creates the state directory (0755) if needed: before the grant journal makes its grants/ in it.
Status ensure_state_dir(const RunLayout& layout);
// Creates <state>/owned and <state>/results if needed, then claims results/<id> and owned/<id>
// with mkdir (which fails if either exists: nothing of an earlier run is touched).
Status claim_run_dirs(const RunLayout& layout, const std::string& id, const JobUser& job_user);
// Gives a claimed id back after a run that executed nothing: removes the (marked) owned root and
// the results directory, which then holds only the empty directories the claim made.
Status release_run_claim(const RunLayout& layout, const std::string& id);
// Where the receipt of a run that executed nothing goes: <state>/refusals/<id>/<time>-<pid>.json,
// a new file each time (never overwritten), outside results/ so the id stays free.
Result<std::string> refusal_receipt_path(const std::string& state_dir, const std::string& id);

// A verified source export lives outside the owned root, in <state>/exports/<id>.<pid>.<start>/
// (the controller's pid and starttime in the name, so `sweep` can prove its creator dead), made
// before the pins are verified (step 2) and removed at cleanup.
Result<std::string> make_export_dir(const std::string& state_dir, const std::string& id);
Status remove_export_dir(const std::string& path);
// For `sealrun sweep`: export directories whose creator is dead, removed; each reported.
std::vector<SweepStep> sweep_exports(const std::string& state_dir);
// Creates scratch/, logs/ and out/; scratch and out belong to the job user when we are root.
Status prepare_job_dirs(const RunLayout& layout, const JobUser& job_user);
// Removes owned/<id> after checking its marker names `id`. Never follows symlinks.
Status remove_owned_root(const RunLayout& layout, const std::string& id);
// The same for a path taken from a grant record (sweep): `owned_root` must be
// <state_dir>/owned/<id> exactly, or nothing is removed.
Status remove_recorded_owned_root(const std::string& state_dir, const std::string& owned_root,
                                  const std::string& id);

}  // namespace sealrun::run
