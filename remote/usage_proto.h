// SPDX-License-Identifier: Apache-2.0
// The two Any messages a Run returns in RunResponse.resource_usage, which bb_worker appends to the
// REv2 ExecutedActionMetadata.auxiliary_metadata: Buildbarn's POSIXResourceUsage (CPU times and
// counters from wait4(2) of the action's `sealrun run`, the memory peak of the job's resource
// group from the receipt) and sealrun's ReceiptReference (which receipt vouches for the action).
#pragma once

#include <sys/resource.h>

#include <optional>

#include "pkg/proto/resourceusage/resourceusage.pb.h"
#include "remote/action_result.h"
#include "sealrun/receipt_reference.pb.h"

namespace sealrun::remote {

// CPU times and counters cover `sealrun run` and everything it waited for: the job, and also the
// run's own pin verification and output hashing. maximum_resident_set_size is the job's resource
// group peak (the figure its memory limit is enforced on) when the receipt has one, else ru_maxrss.
buildbarn::resourceusage::POSIXResourceUsage posix_usage(const struct rusage& usage,
                                                         const std::optional<ReceiptFacts>& facts,
                                                         const Decision& decision);

sealrun::remote::ReceiptReference receipt_reference(const ReceiptFacts& facts,
                                                    const std::string& envelope_sha256,
                                                    const std::string& input_manifest_sha256);

}  // namespace sealrun::remote
