// SPDX-License-Identifier: Apache-2.0
// The index's connection to its database, one interface over two back ends: SQLite through
// libsqlite3 (a file, `sqlite:PATH`: nothing to set up, one node or a few) and PostgreSQL through
// libpq (`postgresql://...`: a fleet). Everything above this file writes one SQL dialect: `$1`,
// `$2`, ... placeholders, every parameter passed as text (or NULL) and converted by the database
// from the column it meets, and only statements both back ends accept (INSERT ... ON CONFLICT DO
// NOTHING, CREATE ... IF NOT EXISTS). What differs lives here: how a write transaction takes its
// lock (SQLite's BEGIN IMMEDIATE waits on a busy timeout; PostgreSQL serialises writers of one node
// with SELECT ... FOR UPDATE in the caller), and how many rows one INSERT carries (PostgreSQL gets
// multi-row VALUES, so a batch costs one round trip instead of one per row).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace sealrun::index {

enum class Backend { kSqlite, kPostgres };

using Value = std::optional<std::string>;  // nullopt: SQL NULL
using Row = std::vector<Value>;

struct Rows {
  std::vector<std::string> columns;
  std::vector<Row> rows;
};

class Db {
 public:
  virtual ~Db() = default;
  virtual Backend backend() const = 0;
  // A statement without result (DDL, BEGIN, ...). `sql` may hold several statements only
  // without parameters.
  virtual Status exec(std::string_view sql) = 0;
  // One statement with text parameters; its rows as text.
  virtual Result<Rows> query(std::string_view sql, const std::vector<Value>& params) = 0;
  // A write transaction: on SQLite the database's write lock is taken now (waiting up to the busy
  // timeout for another writer); on PostgreSQL a plain BEGIN.
  virtual Status begin_write() = 0;
  Status commit() { return exec("COMMIT"); }
  void rollback() { (void)exec("ROLLBACK"); }
  // INSERT INTO table (columns) VALUES ... ON CONFLICT DO NOTHING, for every row.
  virtual Status insert_rows(std::string_view table, const std::vector<std::string>& columns,
                             const std::vector<Row>& rows) = 0;
};

// Opens `url`: "sqlite:PATH" (created when missing if `create`, else a missing file is an error
// saying to ingest first; WAL, a busy timeout) or
// "postgresql://..." / "postgres://..." (libpq's connection URI). The error names the URL without
// its password.
Result<std::unique_ptr<Db>> open_db(const std::string& url, bool create);

// The URL with any password replaced by "***", for messages.
std::string redact_url(std::string_view url);

Result<std::unique_ptr<Db>> open_sqlite(const std::string& path, bool create);
Result<std::unique_ptr<Db>> open_postgres(const std::string& url);

}  // namespace sealrun::index
