// SPDX-License-Identifier: Apache-2.0
// The index's schema, the same on both back ends, and its versioned migrations. Each migration is
// a list of statements applied once, in order, inside one write transaction that also records its
// number in `schema_version`; an index whose version is newer than this sealrun knows is refused
// (an older program must not write into a layout it does not understand). On PostgreSQL the
// migration holds a transaction-level advisory lock, so many nodes starting their first ingest at
// once create the tables exactly once; on SQLite BEGIN IMMEDIATE does the same.
//
// Tables (docs/audit.md describes them for people):
//   nodes   one row per node: its registered key (id and PEM), the ledger length and head SHA-256
//           the index has verified up to, whether a signed receipt has been seen
//   runs    one row per ledger line indexed: (node, seq) -> id, state, exit, times, signer,
//           admission digest, command, the receipt's SHA-256 and where it was read
//   inputs  every pinned digest of a run: (node, seq, ordinal) -> kind, name, uri, algorithm, hex
//   outputs every regular file a run left: (node, seq, path) -> size, sha256
//   ingest_problems  what ingest refused, per node, the first time it was seen
#pragma once

#include "core/result.h"
#include "index/db.h"

namespace sealrun::index {

inline constexpr int kSchemaVersion = 1;

// Brings the database to kSchemaVersion (creating it when empty). Returns the version found
// before (0: new).
Result<int> migrate(Db& db);

}  // namespace sealrun::index
