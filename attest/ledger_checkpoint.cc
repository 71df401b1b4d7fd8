// Ledger checkpoints: see ledger_checkpoint.h and docs/ledger.md.
#include "attest/ledger_checkpoint.h"

#include <fcntl.h>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "attest/dsse.h"
#include "attest/ledger.h"
#include "core/bounded_file.h"
#include "core/hex.h"
#include "core/strict_json.h"
#include "core/syscall.h"

namespace sealrun::attest {
namespace {

using nlohmann::json;

std::string canonical_json(const LedgerCheckpoint& c) {
  json doc = {{"schema", kCheckpointSchema},
              {"length", c.length},
              {"head_sha256", c.head_sha256},
              {"at", c.at}};
  return doc.dump() + "\n";  // nlohmann's object is a std::map: keys sorted
}

Result<LedgerCheckpoint> parse_checkpoint(std::string_view bytes, const std::string& where) {
  auto doc = SEALRUN_TRY_CTX(parse_strict_json(bytes, 2, 1024), where);
  if (!doc.is_object()) return Error::make(where + ": not a JSON object");
  for (const auto& [key, value] : doc.items())
    if (key != "schema" && key != "length" && key != "head_sha256" && key != "at")
      return Error::make(fmt::format("{}: unknown key \"{}\"", where, printable_text(key, 64)));
  if (!doc.contains("schema") || doc["schema"] != kCheckpointSchema)
    return Error::make(fmt::format("{}: not a ledger checkpoint (schema is not \"{}\")", where,
                                   kCheckpointSchema));
  LedgerCheckpoint c;
  if (!doc.contains("length") || !doc["length"].is_number_unsigned())
    return Error::make(where + ": length: expected a whole number");
  c.length = doc["length"].get<uint64_t>();
  if (!doc.contains("head_sha256") || !doc["head_sha256"].is_string() ||
      !is_sha256_hex(doc["head_sha256"].get<std::string>()))
    return Error::make(where + ": head_sha256: expected 64 lower-case hex digits");
  c.head_sha256 = doc["head_sha256"].get<std::string>();
  if (!doc.contains("at") || !doc["at"].is_string() ||
      !is_ledger_timestamp(doc["at"].get<std::string>()))
    return Error::make(where + ": at: expected a UTC time like 2026-01-02T03:04:05.678Z");
  c.at = doc["at"].get<std::string>();
  if ((c.length == 0) != (c.head_sha256 == kGenesisPrevSha256))
    return Error::make(where + ": head_sha256 is 64 zeros exactly when length is 0");
  if (canonical_json(c) != bytes)
    return Error::make(where + ": not in canonical form (keys sorted, compact, one newline)");
  return c;
}

}  // namespace

Result<LedgerCheckpoint> take_checkpoint(int state_dirfd) {
  auto report = verify_ledger(state_dirfd);
  if (!report) {
    if (report.error().err() == ENOENT)
      return Error::make(
          "STATE/ledger.jsonl: missing (no receipt was written yet): nothing to "
          "checkpoint");
    return std::move(report).error();
  }
  if (!report->ok())
    return Error::make(fmt::format(
        "STATE/ledger.jsonl does not verify (line {}: {}); a checkpoint would vouch for it. See "
        "`sealrun receipt verify --ledger`",
        report->first_problem ? report->first_problem->line : 0,
        report->first_problem ? report->first_problem->what : "?"));
  return LedgerCheckpoint{report->lines, report->head_sha256, utc_timestamp_now()};
}

Result<std::string> checkpoint_file_bytes(const LedgerCheckpoint& c, const SigningKey* key) {
  std::string bytes = canonical_json(c);
  if (key == nullptr) return bytes;
  return sign_envelope(*key, kCheckpointPayloadType, bytes);
}

Result<ReadCheckpoint> read_checkpoint(const std::string& path, const PublicKey* key) {
  std::string where = "checkpoint " + path;
  auto bytes = SEALRUN_TRY_CTX(read_bounded_file(AT_FDCWD, path, kMaxCheckpointBytes), where);
  ReadCheckpoint out;
  auto doc = parse_strict_json(bytes, 4);
  out.signed_envelope = doc && doc->is_object() && doc->contains("payloadType");
  if (!out.signed_envelope) {
    out.checkpoint = SEALRUN_TRY(parse_checkpoint(bytes, where));
    return out;
  }
  auto envelope = SEALRUN_TRY(parse_envelope(bytes, where));
  if (key != nullptr) {
    auto verified = verify_envelope(envelope, *key, kCheckpointPayloadType);
    if (!verified) return std::move(verified).error().context(where);
    out.key_id = verified->key_id;
  } else if (envelope.payload_type != kCheckpointPayloadType) {
    return Error::make(
        fmt::format("{}: the envelope's payload type is not {}", where, kCheckpointPayloadType));
  }
  out.checkpoint = SEALRUN_TRY(parse_checkpoint(envelope.payload, where));
  return out;
}

std::optional<std::string> ledger_extends(const LedgerCheckpoint& c, uint64_t lines,
                                          const std::string& sha256_at_length) {
  if (lines < c.length)
    return fmt::format(
        "the ledger has {} line(s), the checkpoint of {} recorded {}: it was truncated", lines,
        c.at, c.length);
  if (c.length == 0) return std::nullopt;
  if (sha256_at_length != c.head_sha256)
    return fmt::format(
        "line {} has sha256 {}, the checkpoint of {} recorded {}: the ledger was rolled back and "
        "written again, or rewritten",
        c.length, sha256_at_length.empty() ? "(unreadable)" : sha256_at_length, c.at,
        c.head_sha256);
  return std::nullopt;
}

}  // namespace sealrun::attest
