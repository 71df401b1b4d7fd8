// SPDX-License-Identifier: Apache-2.0
// `index ingest`: one node's state directory into the index, verified before anything is written.
//
// What is checked, per node, in this order (docs/audit.md says it for auditors):
//   1. the key: the node's public key is registered in the index the first time it is ingested
//      (`--key NODE=PUB`) and never changes through ingest; a key given later that is not the
//      registered one is refused, and a node with no registered key and none given is refused.
//   2. the ledger: its whole chain verifies (attest/ledger.h), and it extends the head the index
//      recorded for the node last time (its length and the SHA-256 of its last line, the same test
//      as a checkpoint, attest/ledger_checkpoint.h): a ledger that is shorter (truncated), or whose
//      line at that length differs (rolled back and written again, or rewritten), is refused whole.
//   3. each new line's receipt: the file with the line's SHA-256 (results/<id>/receipt.json, or one
//      of refusals/<id>/), its DSSE envelope verified with the node's key, its `id` and `state` the
//      line's (so the receipt's id is its directory's), outputs.jsonl (when present) the one the
//      receipt pins by `outputs_list_sha256`. Unsigned receipts are indexed (signer null) only
//      before the node's first signed one, as `receipt verify --ledger` allows them.
// The first receipt that fails stops the node there: what came before it is indexed, nothing after
// it (the index's head never passes a line it could not verify), and the refusal is reported and
// recorded in `ingest_problems`. Everything is read beneath the state directory's descriptor,
// without following a link.
//
// Writes go in batches, each one transaction that re-reads the node's head under a lock (SQLite:
// the database's write lock; PostgreSQL: the node's row, FOR UPDATE) and moves it only forward
// along the ledger just verified, so ingests of the same node racing each other, or many nodes
// at once, index every line exactly once. Rows are inserted with ON CONFLICT DO NOTHING:
// re-running an ingest changes nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attest/keys.h"
#include "core/result.h"
#include "index/db.h"

namespace sealrun::index {

struct NodeSource {
  std::string node;                      // the node's name in the index
  std::string state_dir;                 // its state directory (or a copy of it)
  std::optional<attest::PublicKey> key;  // --key NODE=PUB; nullopt: the registered key
};

struct NodeOutcome {
  std::string node, state_dir;
  uint64_t indexed = 0;       // runs added now
  uint64_t already = 0;       // ledger lines the index held before
  uint64_t ledger_lines = 0;  // complete lines of the ledger read
  uint64_t head_length = 0;   // the index's head for the node afterwards
  std::string head_sha256;
  std::string key_id;                 // the node's registered key
  std::vector<std::string> problems;  // why something was refused (empty: all indexed)
  bool ok() const { return problems.empty(); }
};

struct IngestOptions {
  size_t batch = 1000;     // receipts per transaction
  size_t window = 50'000;  // ledger lines held in memory per pass
};

// Ingests one node. A verification failure is not an Error but a problem in the outcome; an
// Error is a failure of the database or of reading at all.
Result<NodeOutcome> ingest_node(Db& db, const NodeSource& source,
                                const IngestOptions& options = {});

}  // namespace sealrun::index
