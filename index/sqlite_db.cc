// SPDX-License-Identifier: Apache-2.0
// The SQLite back end (db.h) through libsqlite3's C API. The file is opened in WAL mode with a
// busy timeout, so several `index ingest` processes (one per node, a timer and an epilog) share it:
// readers never wait, writers queue on BEGIN IMMEDIATE — taking the write lock when the transaction
// starts rather than when it first writes, so two writers can never both hold a read snapshot and
// then deadlock upgrading it. Placeholders `$N` become SQLite's `?N`. Statements are prepared once
// and kept, by their text, for the life of the connection (a batch reuses them row after row).
#include <fcntl.h>
#include <fmt/format.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <cerrno>
#include <map>

#include "index/db.h"

namespace sealrun::index {
namespace {

constexpr int kBusyTimeoutMs = 60'000;

struct StmtDeleter {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using StmtPtr = std::unique_ptr<sqlite3_stmt, StmtDeleter>;

std::string to_sqlite_placeholders(std::string_view sql) {
  std::string out;
  out.reserve(sql.size());
  for (char c : sql) out += c == '$' ? '?' : c;
  return out;
}

class SqliteDb final : public Db {
 public:
  explicit SqliteDb(sqlite3* db) : db_(db) {}
  ~SqliteDb() override {
    stmts_.clear();
    sqlite3_close_v2(db_);
  }
  Backend backend() const override { return Backend::kSqlite; }

  Status exec(std::string_view sql) override {
    char* err = nullptr;
    std::string text(sql);
    if (sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = err ? err : sqlite3_errmsg(db_);
      sqlite3_free(err);
      return Error::make("sqlite: " + msg);
    }
    return ok_status();
  }

  Result<Rows> query(std::string_view sql, const std::vector<Value>& params) override {
    sqlite3_stmt* s = SEALRUN_TRY(prepare(sql));
    SEALRUN_TRY(bind(s, params, 0));
    Rows out;
    int n = sqlite3_column_count(s);
    for (int i = 0; i < n; ++i) out.columns.emplace_back(sqlite3_column_name(s, i));
    for (;;) {
      int rc = sqlite3_step(s);
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) {
        Error e = Error::make("sqlite: " + std::string(sqlite3_errmsg(db_)));
        sqlite3_reset(s);
        return e;
      }
      Row row;
      for (int i = 0; i < n; ++i) {
        auto* t = reinterpret_cast<const char*>(sqlite3_column_text(s, i));
        row.push_back(t ? Value(std::string(t, sqlite3_column_bytes(s, i))) : std::nullopt);
      }
      out.rows.push_back(std::move(row));
    }
    sqlite3_reset(s);
    return out;
  }

  Status begin_write() override { return exec("BEGIN IMMEDIATE"); }

  Status insert_rows(std::string_view table, const std::vector<std::string>& columns,
                     const std::vector<Row>& rows) override {
    std::string sql = fmt::format("INSERT INTO {} ({}) VALUES (", table, fmt::join(columns, ","));
    for (size_t i = 0; i < columns.size(); ++i) sql += fmt::format("{}${}", i ? "," : "", i + 1);
    sql += ") ON CONFLICT DO NOTHING";
    sqlite3_stmt* s = SEALRUN_TRY(prepare(sql));
    for (const auto& row : rows) {
      SEALRUN_TRY(bind(s, row, 0));
      int rc = sqlite3_step(s);
      sqlite3_reset(s);
      if (rc != SQLITE_DONE)
        return Error::make(
            fmt::format("sqlite: inserting into {}: {}", table, sqlite3_errmsg(db_)));
    }
    return ok_status();
  }

 private:
  Result<sqlite3_stmt*> prepare(std::string_view sql) {
    std::string key(sql);
    if (auto it = stmts_.find(key); it != stmts_.end()) return it->second.get();
    std::string text = to_sqlite_placeholders(sql);
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v3(db_, text.c_str(), static_cast<int>(text.size()),
                           SQLITE_PREPARE_PERSISTENT, &s, nullptr) != SQLITE_OK)
      return Error::make(fmt::format("sqlite: {} (in: {})", sqlite3_errmsg(db_), text));
    stmts_.emplace(key, StmtPtr(s));
    return s;
  }

  Status bind(sqlite3_stmt* s, const std::vector<Value>& params, int) {
    sqlite3_clear_bindings(s);
    for (size_t i = 0; i < params.size(); ++i) {
      int rc = params[i] ? sqlite3_bind_text(s, static_cast<int>(i + 1), params[i]->data(),
                                             static_cast<int>(params[i]->size()), SQLITE_TRANSIENT)
                         : sqlite3_bind_null(s, static_cast<int>(i + 1));
      if (rc != SQLITE_OK) return Error::make("sqlite: bind: " + std::string(sqlite3_errmsg(db_)));
    }
    return ok_status();
  }

  sqlite3* db_;
  std::map<std::string, StmtPtr, std::less<>> stmts_;
};

}  // namespace

Result<std::unique_ptr<Db>> open_sqlite(const std::string& path, bool create) {
  sqlite3* raw = nullptr;
  // NOFOLLOW: the index file is never reached through a symlink someone else placed.
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW |
              SQLITE_OPEN_EXRESCODE | (create ? SQLITE_OPEN_CREATE : 0);
  struct stat st {};
  if (!create && ::stat(path.c_str(), &st) != 0)
    return Error::with_errno(errno, fmt::format("sqlite:{}: no index there (run `sealrun index "
                                                "ingest` first, or give --db)",
                                                path));
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc);
    sqlite3_close_v2(raw);
    return Error::make(fmt::format("sqlite:{}: cannot open: {}", path, msg));
  }
  auto db = std::make_unique<SqliteDb>(raw);
  sqlite3_busy_timeout(raw, kBusyTimeoutMs);
  // WAL: readers do not block the writer nor it them; NORMAL sync is durable at each checkpoint
  // and never corrupts (a crash can lose the last transactions, which the next ingest redoes).
  SEALRUN_TRY_CTX(db->exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
                           "PRAGMA foreign_keys=ON;"),
                  "sqlite:" + path);
  return std::unique_ptr<Db>(std::move(db));
}

}  // namespace sealrun::index
