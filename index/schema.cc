// SPDX-License-Identifier: Apache-2.0
// The migrations (schema.h). A migration is never edited once released: a change is a new entry.
#include "index/schema.h"

#include <fmt/format.h>

#include <vector>

#include "core/syscall.h"

namespace sealrun::index {
namespace {

// Any 64-bit number of our own, the same in every process: the key of the advisory lock.
constexpr char kMigrationLock[] = "SELECT pg_advisory_xact_lock(7305413592047)";

const std::vector<std::vector<const char*>>& migrations() {
  static const std::vector<std::vector<const char*>> kMigrations = {
      // 1: the first layout.
      {
          "CREATE TABLE IF NOT EXISTS nodes ("
          " node TEXT PRIMARY KEY, key_id TEXT NOT NULL, public_key_pem TEXT NOT NULL,"
          " ledger_length BIGINT NOT NULL, ledger_head_sha256 TEXT NOT NULL,"
          " signed_seen INTEGER NOT NULL, registered_at TEXT NOT NULL, ingested_at TEXT)",
          "CREATE TABLE IF NOT EXISTS runs ("
          " node TEXT NOT NULL, seq BIGINT NOT NULL, id TEXT NOT NULL, state TEXT NOT NULL,"
          " exit_code INTEGER, reason TEXT, started TEXT, finished TEXT, ledger_at TEXT NOT NULL,"
          " signer TEXT, admission_sha256 TEXT, command TEXT, receipt_sha256 TEXT NOT NULL,"
          " receipt_path TEXT NOT NULL, PRIMARY KEY (node, seq))",
          "CREATE INDEX IF NOT EXISTS runs_by_finished ON runs (finished)",
          "CREATE INDEX IF NOT EXISTS runs_by_admission ON runs (admission_sha256)",
          "CREATE INDEX IF NOT EXISTS runs_by_id ON runs (id)",
          "CREATE TABLE IF NOT EXISTS inputs ("
          " node TEXT NOT NULL, seq BIGINT NOT NULL, ordinal INTEGER NOT NULL, kind TEXT NOT NULL,"
          " name TEXT NOT NULL, uri TEXT, algorithm TEXT NOT NULL, digest TEXT NOT NULL,"
          " PRIMARY KEY (node, seq, ordinal))",
          "CREATE INDEX IF NOT EXISTS inputs_by_digest ON inputs (digest)",
          "CREATE TABLE IF NOT EXISTS outputs ("
          " node TEXT NOT NULL, seq BIGINT NOT NULL, path TEXT NOT NULL, size BIGINT,"
          " sha256 TEXT NOT NULL, PRIMARY KEY (node, seq, path))",
          "CREATE INDEX IF NOT EXISTS outputs_by_sha256 ON outputs (sha256)",
          "CREATE TABLE IF NOT EXISTS ingest_problems ("
          " node TEXT NOT NULL, what TEXT NOT NULL, first_seen TEXT NOT NULL,"
          " PRIMARY KEY (node, what))",
      },
  };
  return kMigrations;
}

Result<int> current_version(Db& db) {
  auto rows = SEALRUN_TRY(db.query("SELECT max(version) FROM schema_version", {}));
  if (rows.rows.empty() || !rows.rows[0][0]) return 0;
  return std::stoi(*rows.rows[0][0]);
}

Result<int> migrate_locked(Db& db) {
  if (db.backend() == Backend::kPostgres) SEALRUN_TRY(db.query(kMigrationLock, {}));
  SEALRUN_TRY(
      db.exec("CREATE TABLE IF NOT EXISTS schema_version ("
              " version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"));
  int found = SEALRUN_TRY(current_version(db));
  if (found > kSchemaVersion)
    return Error::make(fmt::format(
        "the index has schema version {}, newer than this sealrun's {}: use a newer sealrun", found,
        kSchemaVersion));
  const auto& all = migrations();
  for (int v = found + 1; v <= kSchemaVersion; ++v) {
    for (const char* sql : all[v - 1])
      SEALRUN_TRY_CTX(db.exec(sql), fmt::format("schema migration {}", v));
    SEALRUN_TRY(db.query("INSERT INTO schema_version (version, applied_at) VALUES ($1, $2)",
                         {std::to_string(v), utc_timestamp_now()}));
  }
  return found;
}

}  // namespace

Result<int> migrate(Db& db) {
  // Most opens find the schema current: a read, without the write lock.
  if (auto v = db.query("SELECT max(version) FROM schema_version", {});
      v && !v->rows.empty() && v->rows[0][0] && std::stoi(*v->rows[0][0]) == kSchemaVersion)
    return kSchemaVersion;
  SEALRUN_TRY(db.begin_write());
  auto found = migrate_locked(db);
  if (!found) {
    db.rollback();
    return std::move(found).error().context("the index's schema");
  }
  SEALRUN_TRY(db.commit());
  return *found;
}

}  // namespace sealrun::index
