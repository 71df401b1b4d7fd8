// SPDX-License-Identifier: Apache-2.0
// What the receipt says about the admission it ran (`admission`): the command, environment,
// limits and required containment as admitted, and every pinned input as an in-toto
// ResourceDescriptor (attest::inputs_from_pins) — what an export turns into SLSA's
// externalParameters and resolvedDependencies, and what an auditor reads without the admission
// file at hand.
#pragma once

#include <nlohmann/json.hpp>

#include "admission/admitted.h"
#include "core/result.h"

namespace sealrun::receipt {

Result<nlohmann::json> admission_summary(const admission::Admitted& admitted);

// Adds to the receipt's view[] entry of the source (kind "source") the times its entries had:
// `mtimes` ("fixed" or "preserved") with `mtime_epoch` or `mtimes_sha256`.
void annotate_source_view(nlohmann::json* view, const admission::AdmissionDocument& doc);

}  // namespace sealrun::receipt
