// Ledger checkpoints (docs/ledger.md, "Checkpoints"): a small statement of how long the ledger was
// and the SHA-256 of its last line at one moment, kept somewhere the state directory's owner cannot
// rewrite. Every line names the hash of the line before it, so the hash of line N pins lines 1..N
// byte for byte: a ledger that later has fewer lines (truncated), a different line N (rolled back
// and appended to again, or rewritten) no longer extends the checkpoint. The chain alone cannot
// tell any of these apart from an honest ledger, since whoever rewrites it can rebuild the chain.
//
// The checkpoint is the JSON object
//   {"at":"2026-01-02T03:04:05.678Z","head_sha256":"<64 hex>","length":3,
//    "schema":"sealrun-ledger-checkpoint-v1"}
// (keys sorted, compact, one trailing newline), or — signed with an Ed25519 key — a DSSE envelope
// (dsse.h) whose payload is those bytes and whose payload type is kCheckpointPayloadType.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "attest/keys.h"
#include "core/result.h"

namespace sealrun::attest {

inline constexpr char kCheckpointSchema[] = "sealrun-ledger-checkpoint-v1";
inline constexpr char kCheckpointPayloadType[] = "application/vnd.sealrun.ledger-checkpoint+json";
// A checkpoint file is a few hundred bytes; a larger one is refused unread.
inline constexpr size_t kMaxCheckpointBytes = 64 * 1024;

struct LedgerCheckpoint {
  uint64_t length = 0;      // complete lines of the ledger (0: empty)
  std::string head_sha256;  // SHA-256 of line `length` with its "\n"; 64 zeros when empty
  std::string at;           // when it was taken, UTC "YYYY-MM-DDTHH:MM:SS.mmmZ"
};

// The checkpoint of STATE/ledger.jsonl as it is now, under the ledger's shared lock. Refuses a
// ledger whose chain does not verify (a checkpoint of a broken ledger would vouch for it) and a
// missing one.
Result<LedgerCheckpoint> take_checkpoint(int state_dirfd);

// The file's bytes: the canonical JSON, or its DSSE envelope when `key` is given.
Result<std::string> checkpoint_file_bytes(const LedgerCheckpoint& checkpoint,
                                          const SigningKey* key);

struct ReadCheckpoint {
  LedgerCheckpoint checkpoint;
  bool signed_envelope = false;       // the file was a DSSE envelope
  std::optional<std::string> key_id;  // set when its signature verified with the given key
};

// Reads a checkpoint file (bounded, not a symlink as its last component). A signed one is
// verified when `key` is given (a signature that does not verify is an error); without a key its
// payload is read unverified and the caller says so. Strict: exactly the four keys, canonical
// spelling.
Result<ReadCheckpoint> read_checkpoint(const std::string& path, const PublicKey* key);

// Does a ledger of `lines` complete lines, whose line `c.length` has the SHA-256
// `sha256_at_length` ("" when that line is missing or unreadable), extend the checkpoint? nullopt
// when it does; else what is wrong, for a person.
std::optional<std::string> ledger_extends(const LedgerCheckpoint& c, uint64_t lines,
                                          const std::string& sha256_at_length);

}  // namespace sealrun::attest
