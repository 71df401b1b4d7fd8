// SPDX-License-Identifier: Apache-2.0
// The source's timestamps at verification (docs/admission.md, "Source timestamps"). On the private
// copy a run makes of the source (a tree's snapshot, a commit's export), after its manifest
// verified: mode "fixed" stamps every entry with the one time; mode "preserved" lists the copy's
// mtimes (the host's, kept by the snapshot), compares them with the admission's pin, and names the
// first entry that differs. `admit check` (no copy) checks a preserved tree's mtimes on the host.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "admission/document.h"
#include "admission/verify.h"

namespace sealrun::admission {

// `root`: where the source's files are; `run_copy`: root is the copy the job will see (and may be
// stamped). nullopt when there is nothing to check (mode "fixed" without a copy).
std::optional<PinCheck> check_source_times(const SourcePin& source, int64_t epoch,
                                           const std::string& root, bool run_copy);

// "fixed at 315619200 (1980-01-02T00:00:00Z)": how a check and the receipt name a fixed time.
std::string fixed_times_text(int64_t epoch);

}  // namespace sealrun::admission
