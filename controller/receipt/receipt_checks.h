// SPDX-License-Identifier: Apache-2.0
// The checks of `sealrun receipt verify` beyond the receipt's own consistency (receipt_verify.cc):
// its signature (--key), the outputs on disk (--outputs), strictness about how it ran (--strict),
// and the ledger (--ledger). Each produces findings in the same shape; a check that was not asked
// for, or could not apply, says so as a note — never as a silent pass.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "controller/receipt/receipt.h"

namespace sealrun::receipt {

// A finding's verdict for a person: pass, FAIL, or a note about what was not checked.
enum class Verdict { kPass, kFail, kNote };
struct Check {
  std::string check;
  Verdict verdict = Verdict::kNote;
  std::string detail;
};
std::vector<Check> from_findings(const std::vector<VerifyFinding>& findings);

// The envelope beside `receipt_path` verifies with the public key at `key_path` (or, without a
// key, a note saying what was not checked; an unsigned receipt says so).
std::vector<Check> check_signature(const std::string& receipt_path, const std::string& bytes,
                                   const nlohmann::json& doc, const std::string& key_path);
// Every recorded output is re-hashed under `dir`, walked without following any link the job made:
// a missing, extra (an alias added later too) or changed entry fails (receipt_outputs_on_disk.cc).
std::vector<Check> check_outputs_on_disk(const std::string& receipt_path, const nlohmann::json& doc,
                                         const std::string& dir);
// Fails a report-only run and a run with a degraded dimension.
std::vector<Check> check_strict(const nlohmann::json& doc);
// The ledger's chain, and every receipt it lists (found under the state directory, its SHA-256,
// id and state as recorded, its signature when `key_path` is given): audit_ledger() of
// ledger_audit.h without a checkpoint.
std::vector<Check> check_ledger(const std::string& state_dir, const std::string& key_path);

}  // namespace sealrun::receipt
