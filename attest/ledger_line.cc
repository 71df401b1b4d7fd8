// SPDX-License-Identifier: Apache-2.0
// One ledger line: see ledger_line.h.
#include "attest/ledger_line.h"

#include <fmt/format.h>

#include <ctime>
#include <nlohmann/json.hpp>

#include "core/hex.h"
#include "core/run_id.h"
#include "core/strict_json.h"

namespace sealrun::attest {
namespace {

using nlohmann::json;

bool digits(std::string_view s, size_t from, size_t n, int lo, int hi) {
  int v = 0;
  for (size_t i = from; i < from + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  return v >= lo && v <= hi;
}

}  // namespace

bool is_receipt_state(std::string_view state) {
  return state == "built" || state == "failed" || state == "not_run";
}

bool is_ledger_timestamp(std::string_view at) {
  // 0123456789012345678901234
  // 2026-01-02T03:04:05.678Z
  if (at.size() != 24) return false;
  for (auto [pos, c] :
       {std::pair{4, '-'}, {7, '-'}, {10, 'T'}, {13, ':'}, {16, ':'}, {19, '.'}, {23, 'Z'}})
    if (at[static_cast<size_t>(pos)] != c) return false;
  // Seconds up to 60: a leap second is a valid RFC 3339 time.
  return digits(at, 0, 4, 0, 9999) && digits(at, 5, 2, 1, 12) && digits(at, 8, 2, 1, 31) &&
         digits(at, 11, 2, 0, 23) && digits(at, 14, 2, 0, 59) && digits(at, 17, 2, 0, 60) &&
         digits(at, 20, 3, 0, 999);
}

std::string ledger_timestamp(int64_t unix_seconds) {
  time_t t = static_cast<time_t>(unix_seconds);
  struct tm tm {};
  ::gmtime_r(&t, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.000Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

Status check_entry_fields(const LedgerEntry& e) {
  if (e.seq == 0) return Error::make("seq: must be 1 or more");
  if (!is_valid_run_id(e.id))
    return Error::make(
        fmt::format("id: \"{}\" is not a run id ({})", printable_text(e.id, 80), kRunIdRule));
  if (!is_receipt_state(e.state))
    return Error::make(
        fmt::format("state: \"{}\" is not built, failed or not_run", printable_text(e.state, 40)));
  if (!is_sha256_hex(e.receipt_sha256))
    return Error::make("receipt_sha256: not 64 lower-case hex digits");
  if (!is_sha256_hex(e.prev_sha256))
    return Error::make("prev_sha256: not 64 lower-case hex digits");
  if (!is_ledger_timestamp(e.at))
    return Error::make(fmt::format("at: \"{}\" is not a UTC time like 2026-01-02T03:04:05.678Z",
                                   printable_text(e.at, 40)));
  return ok_status();
}

std::string format_ledger_line(const LedgerEntry& e) {
  // nlohmann's object is a std::map: keys come out sorted; dump() with no indent is compact.
  json line = {{"seq", e.seq},
               {"id", e.id},
               {"state", e.state},
               {"receipt_sha256", e.receipt_sha256},
               {"prev_sha256", e.prev_sha256},
               {"at", e.at}};
  return line.dump() + "\n";
}

Result<LedgerEntry> parse_ledger_line(std::string_view line) {
  if (line.size() + 1 > kMaxLedgerLineBytes)
    return Error::make(fmt::format("longer than {} bytes", kMaxLedgerLineBytes));
  auto doc = SEALRUN_TRY(parse_strict_json(line, 2, kMaxLedgerLineBytes));
  if (!doc.is_object()) return Error::make("not a JSON object");
  static constexpr const char* kKeys[] = {"at",  "id",   "prev_sha256", "receipt_sha256",
                                          "seq", "state"};
  for (const auto& [key, value] : doc.items()) {
    bool known = false;
    for (const char* k : kKeys) known = known || key == k;
    if (!known) return Error::make(fmt::format("unknown key \"{}\"", printable_text(key, 64)));
  }
  LedgerEntry e;
  for (const char* k : kKeys) {
    auto it = doc.find(k);
    if (it == doc.end()) return Error::make(fmt::format("missing \"{}\"", k));
    if (std::string_view(k) == "seq") {
      if (!it->is_number_unsigned()) return Error::make("seq: expected a positive integer");
      e.seq = it->get<uint64_t>();
      continue;
    }
    if (!it->is_string()) return Error::make(fmt::format("{}: expected a string", k));
  }
  e.id = doc["id"].get<std::string>();
  e.state = doc["state"].get<std::string>();
  e.receipt_sha256 = doc["receipt_sha256"].get<std::string>();
  e.prev_sha256 = doc["prev_sha256"].get<std::string>();
  e.at = doc["at"].get<std::string>();
  SEALRUN_TRY(check_entry_fields(e));
  std::string canonical = format_ledger_line(e);
  if (std::string_view(canonical).substr(0, canonical.size() - 1) != line)
    return Error::make("not in canonical form (keys sorted, no spaces, as sealrun writes it)");
  return e;
}

}  // namespace sealrun::attest
