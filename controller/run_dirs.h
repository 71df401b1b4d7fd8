// The run's directories: claimed fresh (refusing an id that was used before, ACCEPTANCE 16),
// marked as sealrun's own, handed to the job user where the job must write, and removed at the end
// only after the marker proves they are ours.
#pragma once

#include <string>

#include "controller/run_plan.h"
#include "core/result.h"

namespace sealrun::run {

inline constexpr const char* kOwnedMarker = ".sealrun-owned";

// Creates <state>/owned and <state>/results if needed, then claims results/<id> and owned/<id>
// with mkdir (which fails if either exists: nothing of an earlier run is touched).
Status claim_run_dirs(const RunLayout& layout, const std::string& id);
// Creates scratch/, logs/ and out/; scratch and out belong to the job user when we are root.
Status prepare_job_dirs(const RunLayout& layout);
// Removes owned/<id> after checking its marker names `id`. Never follows symlinks.
Status remove_owned_root(const RunLayout& layout, const std::string& id);
// The same for a path taken from a grant record (sweep): `owned_root` must be
// <state_dir>/owned/<id> exactly, or nothing is removed.
Status remove_recorded_owned_root(const std::string& state_dir, const std::string& owned_root,
                                  const std::string& id);

}  // namespace sealrun::run
