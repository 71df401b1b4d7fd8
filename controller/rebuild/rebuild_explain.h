// SPDX-License-Identifier: Apache-2.0
// `sealrun rebuild --explain`: how each differing output differs. With diffoscope installed, its
// text report of each changed pair (run in a sandbox of its own, explain_sandbox.h, on copies of
// the files opened here without following links, time-, memory- and size-bounded), kept in
// results/<rebuild>/explain/; without it, it says so and gives both sizes and the first byte
// where the two files differ.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "containment/mechanism_registry.h"
#include "controller/receipt/output_compare.h"

namespace sealrun::run {

inline constexpr size_t kExplainReportBytes = 64 * 1024;  // per pair, kept and shown
inline constexpr int64_t kExplainTimeoutMs = 120 * 1000;  // per pair

// One entry per change: {path, how: diffoscope|bytes|none, ...}. `original_root` and
// `rebuilt_root` are the two runs' results/<id> directories (their out/ holds the outputs);
// `context`: the mechanism context diffoscope's sandbox is made with (explain_sandbox.h).
nlohmann::json explain_changes(const std::vector<receipt::OutputChange>& changes,
                               const std::string& original_root, const std::string& rebuilt_root,
                               const MechanismContext& context);
std::string explain_text(const nlohmann::json& explained);

}  // namespace sealrun::run
