// SPDX-License-Identifier: Apache-2.0
// One line of the ledger (STATE/ledger.jsonl, docs/ledger.md): its canonical spelling and its
// strict reading. A line is the compact JSON object
//   {"at":"2026-01-02T03:04:05.678Z","id":"run-1","prev_sha256":"<64 hex>",
//    "receipt_sha256":"<64 hex>","seq":1,"state":"built"}
// with keys sorted and no whitespace, followed by "\n". The reader refuses any other spelling of
// the same content, so one entry has exactly one byte string and the hash chain covers meaning
// and bytes alike.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.h"

namespace sealrun::attest {

inline constexpr size_t kMaxLedgerLineBytes = 1024;  // with its newline; a real line is ~250
inline constexpr char kGenesisPrevSha256[] =
    "0000000000000000000000000000000000000000000000000000000000000000";

struct LedgerEntry {
  uint64_t seq = 0;            // 1 for the first line, then +1 per line
  std::string id;              // the run id (a valid run id, core/run_id.h)
  std::string state;           // built | failed | not_run
  std::string receipt_sha256;  // SHA-256 of results/<id>/receipt.json's exact bytes
  std::string prev_sha256;     // SHA-256 of the previous line's bytes, its "\n" included
  std::string at;              // when the line was appended: UTC, "YYYY-MM-DDTHH:MM:SS.mmmZ"
};

bool is_receipt_state(std::string_view state);
// Exactly "YYYY-MM-DDTHH:MM:SS.mmmZ" with digits in range (core's utc_timestamp_now() format).
bool is_ledger_timestamp(std::string_view at);
// The same format for a Unix time (whole seconds, ".000"), for comparisons with `at`.
std::string ledger_timestamp(int64_t unix_seconds);

// Checks every field's form (the chain is the ledger's business, not the line's).
Status check_entry_fields(const LedgerEntry& entry);
// The canonical line, "\n" included. The entry must pass check_entry_fields.
std::string format_ledger_line(const LedgerEntry& entry);
// Reads one line (without its "\n"): strict JSON, exactly the six keys, each field's form, and
// canonical spelling.
Result<LedgerEntry> parse_ledger_line(std::string_view line);

}  // namespace sealrun::attest
