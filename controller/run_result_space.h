// The run's result space (docs/growth.md): where the host can make the owned space a file system of
// its own, /out is one too — a second ext4 image on a loop device, sized to limits.result_max_bytes
// with limits.result_max_inodes inodes, mounted (nosuid, nodev) at STATE/owned/<id>+out and bound
// as the job's /out. A write or a create past the bound then fails with ENOSPC inside the job, and
// the host never holds more of /out than that bound. After the job, what it left is copied into
// results/<id>/out (result_copy.h), where the output walk records it exactly as before; the file
// system is removed at cleanup like the owned one.
//
// Why a second file system and not project quotas on the owned one: it reuses the owned file
// system's whole life cycle (record before create, template instead of mkfs, teardown with proofs,
// sweep), keeps one statfs per census sample for each tree, and needs no quota feature, quota
// files or quotactl; it costs one more loop device and mount per run (docs/growth.md has the
// figures). Where no file system of its own can be made (not root, no loop devices, ...) or the
// outputs come from a writable source, /out stays results/<id>/out, bounded by the walking census
// only, and the receipt's `result_space` says so and why.
#pragma once

#include <cstdint>

#include "admission/document.h"
#include "controller/output_walk.h"
#include "controller/run_context.h"
#include "controller/state_dir.h"
#include "core/sweep_step.h"

namespace sealrun::run {

// limits.result_max_inodes, or its default for limits.result_max_bytes when not given.
uint64_t result_max_inodes(const admission::Limits& limits);

// After make_owned_space() (whose file system proves the host can) and before the view is planned:
// makes and mounts the result space, and records `result_space` either way.
void make_result_space(RunContext& run);

// The run's layout with job_output_dir where the job's /out really is: what the view is planned
// from and what the census measures.
RunLayout job_layout(const RunContext& run);

// After the job, before the outputs are recorded: copies the result space into results/<id>/out.
// False (with the failure recorded) when that could not be done whole.
bool take_result_space(RunContext& run, const StopCheck& stop);

// At cleanup: unmounts and removes the result space (each step a cleanup action).
void remove_result_space(RunContext& run);

// For `sealrun sweep`, a run whose controller is dead: its result space torn down (what it held
// is gone with it: a killed run's outputs never reached results/<id>/out) and its mount point
// removed.
std::vector<SweepStep> sweep_result_space(const StateDir& state, const std::string& id);

}  // namespace sealrun::run
