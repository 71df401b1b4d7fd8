// SPDX-License-Identifier: Apache-2.0
// The check after the job (docs/view.md, "After the job"): what the view bound from the host —
// the toolchain, each pinned tree, the closure files and, under bwrap, the unpacked image root —
// must be what was admitted, after the job as before it.
//
// It is made on a thread of its own, started as soon as the job has ended, while the controller
// records the outputs, stops the job's group and removes the owned file systems: none of those
// touches what it reads (host trees and files, and the image root, all read-only to the job), and
// on an otherwise idle machine the two together take the time of the longer one instead of the
// sum (bench/README.md, "A run's wall time on an idle core"). The cleanup joins it
// before anything the check relies on is let go (the image root's lock, the state directory),
// and only then are its verifications, pin-cache uses and any failure recorded: the receipt
// holds the same entries, in the same place, as when the check ran in line.
#pragma once

#include <memory>

#include "controller/run/run_context.h"

namespace sealrun::run {

// Starts the check (the caller has made sure no stop is requested). At most one per run.
void start_view_recheck(RunContext& run);

// Waits for the check started by start_view_recheck() and records it: each check as a
// verification "<target> (after the run)", its digest-cache uses in pin_cache, and a change as the
// run's failure (exit 5, naming each changed tree and file). Nothing when none was started.
void finish_view_recheck(RunContext& run);

}  // namespace sealrun::run
