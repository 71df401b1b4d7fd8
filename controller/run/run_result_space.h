// SPDX-License-Identifier: Apache-2.0
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
// figures). Where the outputs are taken from a writable source (the runner's actions), the result
// space holds a copy of the verified source copy and is the job's /src instead, bounded alike (the
// inputs count, as result_max_bytes counts them); after the job it is copied back over the source
// copy, from which the outputs are taken as before (source_outputs.h). Where no file system of its
// own can be made (not root, no loop devices, ...), or the source copy does not fit in it, /out (or
// the source copy) stays where it was, bounded by the walking census only, and the receipt's
// `result_space` says so and why.
#pragma once

#include <cstdint>
#include <future>

#include "admission/document.h"
#include "census/census_thread.h"
#include "controller/common/state_dir.h"
#include "controller/receipt/output_walk.h"
#include "controller/run/run_context.h"
#include "core/sweep_step.h"

namespace sealrun::run {

// limits.result_max_inodes, or its default for limits.result_max_bytes when not given.
uint64_t result_max_inodes(const admission::Limits& limits);

// The result space's file system being made on a thread of its own (begin_result_space), while
// the owned one is made on the pipeline's: the two are independent, and their waits (the loop
// device's flush of the image, the mount's first reads, mkfs) overlap (bench/README.md).
struct PendingResultSpace {
  std::string why_not;  // set when it was not begun (the reason, for the receipt)
  std::future<Result<ownedfs::OwnedFs>> made;
};

// Before make_owned_space(): makes the result space's mount point and begins its file system when
// the host can make one (PipelineDeps::probe_owned_fs) and the limits fit.
PendingResultSpace begin_result_space(RunContext& run);

// After make_owned_space() and before the view is planned: finishes the result space begun (one
// made while the owned space could not be is removed again: both are file systems or neither),
// and records `result_space` either way. For outputs taken from a writable source, the verified
// source copy is copied onto it, and it is the job's /src (where the copy does not fit, the result
// space is removed and the census guards the copy as before). An error only when such a
// part-filled result space could not be removed.
Status make_result_space(RunContext& run, PendingResultSpace pending);

// The run's layout with job_output_dir where the job's /out really is (or, for outputs taken from
// the source, job_source_dir where its writable /src is): what the view is planned from and what
// the census measures.
RunLayout job_layout(const RunContext& run);

// Where the job's writable source is: the result space, or the admitted source copy.
std::string job_source_root(const RunContext& run);

// For outputs taken from the source: what the census measures as the result (the result space's
// statfs, or the walk of the source copy).
void guard_result_space(const RunContext& run, census::CensusConfig& config);

// After the job, before the outputs are recorded: copies the result space into results/<id>/out.
// False (with the failure recorded) when that could not be done whole.
bool take_result_space(RunContext& run, const StopCheck& stop);

// At cleanup: unmounts and removes the result space (each step a cleanup action).
void remove_result_space(RunContext& run);

// At cleanup: removes the result space and the owned space at once (the result space's on a
// thread of its own), recorded in that order as remove_result_space() and remove_owned_space()
// would.
void remove_result_and_owned_space(RunContext& run);

// For `sealrun sweep`, a run whose controller is dead: its result space torn down (what it held
// is gone with it: a killed run's outputs never reached results/<id>/out) and its mount point
// removed.
std::vector<SweepStep> sweep_result_space(const StateDir& state, const std::string& id);

}  // namespace sealrun::run
