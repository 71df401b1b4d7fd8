// SPDX-License-Identifier: Apache-2.0
// The stages of `sealrun run`, one per step of docs/contract.md ("The run pipeline, in order"),
// each taking the run's context and returning a StageStatus; run_pipeline.cc calls them in order
// and routes every failure through RunContext::record_failure(). The cleanup stage always runs.
#pragma once

#include "controller/run/run_context.h"

namespace sealrun::run {

// 0. The request itself: a valid --id that no earlier executed run used, a well-formed --sha256.
StageStatus stage_check_request(RunContext& run);
// 1. Read the admission (bounded, no symlink) and compare the SHA-256 of its exact bytes; parse.
StageStatus stage_read_admission(RunContext& run);
// 2. Verify every pin (source, toolchain, image, host tools). Any mismatch: exit 3.
StageStatus stage_verify_pins(RunContext& run);
// 3. Claim fresh owned roots (0700, marker, an id never reused), recorded in the grant journal.
StageStatus stage_claim_owned_roots(RunContext& run);
// 4. Acquire a containment grant: strongest mechanism first; required ⊆ enforced or exit 4.
StageStatus stage_acquire_grant(RunContext& run);
// 5. The resource group with the admitted limits, read back before the job starts.
StageStatus stage_create_group(RunContext& run);
// 6. The growth census, configured (its thread starts right after the spawn: no thread may exist
//    before a fork that is still to come).
StageStatus stage_prepare_census(RunContext& run);
// 7. Run the admitted command contained; the census samples and guards while it runs.
StageStatus stage_run_job(RunContext& run);
// 8. After the job: its end explained, the toolchain unchanged, outputs hashed, logs kept.
StageStatus stage_post_run(RunContext& run);
// 9. Always: stop the census, stop and remove the job's processes, group and container, confirm
//    the stop, read the final memory figures, release what the run holds.
void stage_cleanup(RunContext& run);

}  // namespace sealrun::run
