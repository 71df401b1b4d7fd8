// SPDX-License-Identifier: Apache-2.0
// The one spelling of a byte count for a person: binary units with one decimal ("1.5 GiB",
// "312.0 KiB"), whole bytes below 1 KiB ("17 B"). Progress lines, summaries, `receipt show` and
// the report's timeline all use it, so the same size reads the same everywhere.
#pragma once

#include <cstdint>
#include <string>

namespace sealrun {

std::string binary_size_text(uint64_t bytes);

}  // namespace sealrun
