// SPDX-License-Identifier: Apache-2.0
// Whether a receipt is the record of the run it says it is, and whether the ledger is the one an
// auditor saw before: `receipt verify RECEIPT` (its id against its results/<id>/ directory) and
// `receipt verify --ledger STATE [--key PUB] [--checkpoint FILE] [--from SEQ]`.
//
// A signed receipt copied to results/<another id>/ keeps a valid signature, and a ledger line for
// it chains correctly (anyone who can write the ledger can append a line): so the receipt's `id`
// must be the directory's and the line's, and a ledger that names one receipt (by its SHA-256)
// twice fails. The chain cannot show that the ledger was cut short, or rolled back and written
// again: only a checkpoint kept elsewhere can (attest/ledger_checkpoint.h).
//
// With --key, receipts made before the state directory had a key are unsigned; they are reported
// as "unsigned, before the first signed receipt" (a note, not a failure). An unsigned receipt
// after a signed one fails: a signature was removed, or the key was taken away. docs/ledger.md says
// this in the project's words.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "controller/receipt/receipt_checks.h"

namespace sealrun::receipt {

// The receipt's `id` against the directory it was read from: results/<id>/receipt.json or
// refusals/<id>/<name>.json. A receipt elsewhere (copied out for review) gets a note.
Check check_receipt_place(const std::string& receipt_path, const nlohmann::json& doc);

struct LedgerAuditOptions {
  std::string state_dir;
  std::string key_path;         // "": signatures not checked
  std::string checkpoint_path;  // "": no checkpoint
  uint64_t from_seq = 1;        // receipts of lines before this are not read (the chain is)
};

struct LedgerAudit {
  std::vector<Check> checks;
  // The ledger as read: its complete lines and the head of its unbroken chain (what a checkpoint
  // records; `sealrun ledger checkpoint` writes it down). Absent when it could not be read.
  bool read = false;
  uint64_t length = 0;
  uint64_t head_seq = 0;
  std::string head_sha256;
};

LedgerAudit audit_ledger(const LedgerAuditOptions& options);

}  // namespace sealrun::receipt
