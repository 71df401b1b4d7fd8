// SPDX-License-Identifier: Apache-2.0
// The ledger: STATE/ledger.jsonl, one line appended per receipt written, each line naming the
// SHA-256 of the line before it (docs/ledger.md). Appending takes an exclusive flock on
// STATE/ledger.lock, checks the last line, writes the new line with one write(2) and fsyncs it;
// a torn last line (a crash mid-append) is reported and never extended. Verifying walks the whole
// chain within fixed bounds and reports the first bad line. Every file is opened through the
// state directory's fd without following a symlink (the state directory may be writable by the
// job user: ACCEPTANCE 28).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "attest/ledger_line.h"
#include "core/result.h"
#include "core/unique_fd.h"

namespace sealrun::attest {

inline constexpr char kLedgerFile[] = "ledger.jsonl";
inline constexpr char kLedgerLockFile[] = "ledger.lock";
inline constexpr uint64_t kMaxLedgerLines = 1'000'000;
inline constexpr uint64_t kMaxLedgerBytes = kMaxLedgerLines * kMaxLedgerLineBytes;
inline constexpr int kLedgerLockTimeoutMs = 10'000;

// Opens the user's state directory (O_DIRECTORY; the path is the user's, so it may be a symlink;
// nothing below it will be followed).
Result<UniqueFd> open_state_dir(const std::string& path);

struct LedgerAppend {
  std::string id;
  std::string state;           // built | failed | not_run
  std::string receipt_sha256;  // SHA-256 of the receipt file's exact bytes
  std::string at;              // "" = now (core's utc_timestamp_now())
  int lock_timeout_ms = kLedgerLockTimeoutMs;
};

// Appends one line and returns the entry written (with its seq and prev_sha256). Refuses, and
// changes nothing, when: the lock cannot be taken within lock_timeout_ms; ledger.jsonl or
// ledger.lock is a symlink or not a regular file; the last line is torn (no trailing newline) or
// does not parse; the input fields are malformed. A failed write is rolled back by truncating to
// the previous length.
Result<LedgerEntry> append_to_ledger(int state_dirfd, const LedgerAppend& input);

struct LedgerProblem {
  uint64_t line = 0;  // 1-based line number
  std::string
      what;  // "prev_sha256 does not match line 3 (a line was deleted, reordered or edited)"
};

struct LedgerReport {
  uint64_t lines = 0;     // complete lines read
  uint64_t problems = 0;  // bad lines (only the first is described)
  std::optional<LedgerProblem> first_problem;
  uint64_t torn_bytes = 0;  // bytes after the last newline (a torn append), 0 normally
  // The head of the unbroken chain from line 1 (the whole ledger when ok()): its seq and the
  // SHA-256 of its bytes with the "\n" — what an auditor notes down to detect a later truncation.
  uint64_t head_seq = 0;
  std::string head_sha256 = kGenesisPrevSha256;
  bool ok() const { return !first_problem && torn_bytes == 0; }
};

// Walks STATE/ledger.jsonl under a shared lock and checks: every line parses (ledger_line.h),
// seq runs 1, 2, 3, ... and prev_sha256 is the SHA-256 of the line before (zeros for the first),
// no line longer than kMaxLedgerLineBytes, at most kMaxLedgerLines lines, and no torn tail.
// `each` (optional) sees every line that parses, with its 1-based line number, even after a
// problem, so a listing can still show what is readable. A missing ledger is an error with errno
// ENOENT; a chain problem is not an error but a report whose ok() is false.
using LedgerVisitor = std::function<void(const LedgerEntry& entry, uint64_t line)>;
Result<LedgerReport> verify_ledger(int state_dirfd, const LedgerVisitor& each = nullptr);

struct LedgerFilter {
  std::optional<std::string> state;     // only this state
  std::optional<int64_t> since_unix_s;  // only entries at or after this time
  std::optional<std::string> id;        // only this run id
};
struct LedgerListing {
  std::vector<LedgerEntry> entries;  // in ledger order
  LedgerReport report;               // the chain's verdict, for a warning next to the list
};
// The entries that pass `filter`, in order. A missing ledger is an empty listing (no run yet).
Result<LedgerListing> list_ledger(int state_dirfd, const LedgerFilter& filter);

// Removes a torn tail (the bytes after the last newline) under the exclusive lock and returns
// them, so the caller can show or keep them. Returns "" when the ledger ends with a newline.
Result<std::string> remove_torn_tail(int state_dirfd);

}  // namespace sealrun::attest
