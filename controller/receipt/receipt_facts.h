// SPDX-License-Identifier: Apache-2.0
// Facts a person wants from a receipt, read out of its JSON for both `receipt show` and `receipt
// report`, so the terminal and the page say the same: which limits the run reached, what its view
// was made of, sizes in binary units, the census's series. Pure and total: a receipt is untrusted,
// so a member of the wrong type reads as absent, never as an exception. Strings come back raw;
// whoever shows them escapes them (display_text.h, html_text.h).
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "controller/receipt/output_compare.h"
#include "controller/receipt/svg_timeline.h"

namespace sealrun::receipt {

// A limit the run reached: "pids", "memory", "memory_high", "growth", "wall_clock", or any name the
// receipt's own `limits_hit` lists; `detail` says what shows it.
struct LimitHit {
  std::string name;
  std::string detail;
};
// The receipt's `limits_hit` (when it has one), then what its other members show: OOM kills and
// hits of memory.max, throttling at memory.high (memory.events), a growth guard that tripped, a
// command stopped at its wall clock. One entry per name.
std::vector<LimitHit> limits_hit(const nlohmann::json& r);

// How many view entries of each kind, in the order the kinds first appear.
std::vector<std::pair<std::string, size_t>> view_kinds(const nlohmann::json& r);

// A byte count for a person: "8.0 GiB", "512 B"; "unlimited" for the kernel's "max" (2^63 and
// more); "unknown" for null; the JSON text of anything that is not a number.
std::string bytes_text(const nlohmann::json& v);

// One series of the census's samples (`key`: "memory_bytes", "owned_bytes", ...), the samples
// without it left out.
std::vector<report::PlotPoint> sample_series(const nlohmann::json& r, const char* key);

// Any JSON value as text (invalid UTF-8 replaced, never an exception).
std::string json_text(const nlohmann::json& v);
// member_text(doc, key): the raw value of a string member, or the JSON of any other value; ""
// when absent (output_compare.h).
// `doc[key]` when it is an array, else an empty array.
nlohmann::json member_list(const nlohmann::json& doc, const char* key);
// The digest of an in-toto resource descriptor, "algorithm:hex" (the first, when several).
std::string input_digest(const nlohmann::json& input);

}  // namespace sealrun::receipt
