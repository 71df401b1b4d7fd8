// SPDX-License-Identifier: Apache-2.0
// The PostgreSQL back end (db.h) through libpq's C API. Every statement goes with
// PQexecParams, parameters as text: the server converts each from the column or operator it meets,
// so the SQL above is the same as SQLite's. A batch of rows is one INSERT with multi-row VALUES
// (as many rows as fit under the protocol's 65,535 parameters), one round trip for hundreds of
// rows. Notices (e.g. "relation already exists, skipping") are silenced: they are for a console.
// libpq is loaded on first use (libpq_library.h); every call goes through its table, pq().
#include <fmt/format.h>

#include "index/db.h"
#include "index/libpq_library.h"

namespace sealrun::index {
namespace {

constexpr size_t kMaxParams = 65'535;
constexpr size_t kMaxRowsPerInsert = 1'000;

// Only reached after open_postgres() loaded the library.
const LibpqApi& pq() { return **libpq_api(); }

struct ResultDeleter {
  void operator()(PGresult* r) const { pq().PQclear(r); }
};
using PgResult = std::unique_ptr<PGresult, ResultDeleter>;

void ignore_notice(void*, const char*) {}

std::string pg_error(PGconn* c, const PGresult* r) {
  std::string msg = r ? pq().PQresultErrorMessage(r) : pq().PQerrorMessage(c);
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
  return "postgresql: " + msg;
}

class PostgresDb final : public Db {
 public:
  explicit PostgresDb(PGconn* c) : conn_(c) {}
  ~PostgresDb() override { pq().PQfinish(conn_); }
  Backend backend() const override { return Backend::kPostgres; }

  Status exec(std::string_view sql) override {
    std::string text(sql);
    PgResult r(pq().PQexec(conn_, text.c_str()));
    auto st = r ? pq().PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
      return Error::make(pg_error(conn_, r.get()));
    return ok_status();
  }

  Result<Rows> query(std::string_view sql, const std::vector<Value>& params) override {
    PgResult r = SEALRUN_TRY(run(sql, params));
    Rows out;
    int cols = pq().PQnfields(r.get());
    int n = pq().PQntuples(r.get());
    for (int c = 0; c < cols; ++c) out.columns.emplace_back(pq().PQfname(r.get(), c));
    out.rows.reserve(n);
    for (int i = 0; i < n; ++i) {
      Row row;
      row.reserve(cols);
      for (int c = 0; c < cols; ++c)
        row.push_back(pq().PQgetisnull(r.get(), i, c)
                          ? std::nullopt
                          : Value(std::string(pq().PQgetvalue(r.get(), i, c),
                                              pq().PQgetlength(r.get(), i, c))));
      out.rows.push_back(std::move(row));
    }
    return out;
  }

  Status begin_write() override { return exec("BEGIN"); }

  Status insert_rows(std::string_view table, const std::vector<std::string>& columns,
                     const std::vector<Row>& rows) override {
    if (columns.empty()) return ok_status();
    size_t per = std::min(kMaxRowsPerInsert, kMaxParams / columns.size());
    for (size_t start = 0; start < rows.size(); start += per) {
      size_t end = std::min(rows.size(), start + per);
      std::string sql = fmt::format("INSERT INTO {} ({}) VALUES ", table, fmt::join(columns, ","));
      std::vector<Value> params;
      params.reserve((end - start) * columns.size());
      for (size_t i = start; i < end; ++i) {
        sql += i == start ? "(" : ",(";
        for (size_t c = 0; c < columns.size(); ++c) {
          params.push_back(rows[i][c]);
          sql += fmt::format("{}${}", c ? "," : "", params.size());
        }
        sql += ')';
      }
      sql += " ON CONFLICT DO NOTHING";
      SEALRUN_TRY(run(sql, params));
    }
    return ok_status();
  }

 private:
  Result<PgResult> run(std::string_view sql, const std::vector<Value>& params) {
    std::vector<const char*> values;
    std::vector<int> lengths;
    values.reserve(params.size());
    for (const auto& p : params) {
      values.push_back(p ? p->c_str() : nullptr);
      lengths.push_back(p ? static_cast<int>(p->size()) : 0);
    }
    std::string text(sql);
    PgResult r(pq().PQexecParams(conn_, text.c_str(), static_cast<int>(params.size()), nullptr,
                                 values.data(), lengths.data(), nullptr, 0));
    auto st = r ? pq().PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
      return Error::make(pg_error(conn_, r.get()));
    return r;
  }

  PGconn* conn_;
};

}  // namespace

Result<std::unique_ptr<Db>> open_postgres(const std::string& url) {
  SEALRUN_TRY(libpq_api());
  PGconn* c = pq().PQconnectdb(url.c_str());
  if (c == nullptr) return Error::make("postgresql: out of memory connecting");
  if (pq().PQstatus(c) != CONNECTION_OK) {
    std::string msg = pg_error(c, nullptr);
    pq().PQfinish(c);
    return Error::make(fmt::format("{}: cannot connect: {}", redact_url(url), msg));
  }
  pq().PQsetNoticeProcessor(c, ignore_notice, nullptr);
  return std::unique_ptr<Db>(std::make_unique<PostgresDb>(c));
}

}  // namespace sealrun::index
