// SPDX-License-Identifier: Apache-2.0
// What `receipt show` and `receipt report` read beside a receipt: the state's public key, the
// envelope's verdict, and the receipt's own checks. A review finds the key as a person would: the
// key given with --key, else STATE/keys/sealrun.pub when the receipt lies in a state directory
// (STATE/results/<id>/receipt.json, STATE/refusals/<id>/<name>.json) and that key exists.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "controller/receipt/receipt_report_html.h"
#include "core/result.h"

namespace sealrun::receipt {

// The public key a review checks `receipt_path`'s envelope with; "" when there is none.
std::string review_key_for(const std::string& receipt_path, const std::string& key_flag);

// The receipt's own checks (digest, consistency: receipt verify's) and its signature, as a page
// shows them. `bytes` are the receipt file's exact bytes.
std::vector<report::PageCheck> review_checks(const std::string& receipt_path,
                                             const std::string& bytes, const nlohmann::json& doc,
                                             const std::string& key_flag);

// `receipt show`'s text for the receipt at `path` (read again, bounded, for its signature).
std::string show_receipt(const std::string& path, const nlohmann::json& doc, bool verbose,
                         const std::string& key_flag);

}  // namespace sealrun::receipt
