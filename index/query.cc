// SPDX-License-Identifier: Apache-2.0
// The index's reads (query.h).
#include "index/query.h"

#include <fmt/format.h>

namespace sealrun::index {

namespace {

std::string text(const Value& v) { return v.value_or(""); }

}  // namespace

Result<std::vector<IndexedRun>> query_runs(Db& db, const QueryFilter& f, const QueryOptions& o) {
  std::vector<Value> params;
  auto param = [&](const std::string& v) {
    params.push_back(v);
    return fmt::format("${}", params.size());
  };
  std::string from = "runs r";
  // Digest filters join a DISTINCT set of (node, seq) found through the digest's own index.
  if (f.output_sha256)
    from += fmt::format(
        " JOIN (SELECT DISTINCT node, seq FROM outputs WHERE sha256 = {}) o"
        " ON o.node = r.node AND o.seq = r.seq",
        param(*f.output_sha256));
  if (f.input_sha256)
    from += fmt::format(
        " JOIN (SELECT DISTINCT node, seq FROM inputs WHERE digest = {}) i"
        " ON i.node = r.node AND i.seq = r.seq",
        param(*f.input_sha256));
  std::vector<std::string> where;
  if (f.admission_sha256) where.push_back("r.admission_sha256 = " + param(*f.admission_sha256));
  if (f.state) where.push_back("r.state = " + param(*f.state));
  if (f.node) where.push_back("r.node = " + param(*f.node));
  if (f.since) where.push_back("r.finished >= " + param(*f.since));
  std::string sql = fmt::format(
      "SELECT r.node, r.seq, r.id, r.state, r.exit_code, r.reason, r.started, r.finished, "
      "r.ledger_at, r.signer, r.admission_sha256, r.command, r.receipt_sha256, r.receipt_path "
      "FROM {}{}{} ORDER BY r.finished{}, r.node, r.seq",
      from, where.empty() ? "" : " WHERE ", fmt::join(where, " AND "),
      f.newest_first ? " DESC" : "");
  if (f.limit) sql += fmt::format(" LIMIT {}", f.limit);
  auto rows = SEALRUN_TRY(db.query(sql, params));
  std::vector<IndexedRun> out;
  out.reserve(rows.rows.size());
  for (const auto& r : rows.rows) {
    IndexedRun run;
    run.node = text(r[0]);
    run.seq = std::stoull(text(r[1]));
    run.id = text(r[2]);
    run.state = text(r[3]);
    if (r[4]) run.exit_code = std::stoll(*r[4]);
    run.reason = text(r[5]);
    run.started = text(r[6]);
    run.finished = text(r[7]);
    run.ledger_at = text(r[8]);
    run.signer = r[9];
    run.admission_sha256 = text(r[10]);
    run.command = text(r[11]);
    run.receipt_sha256 = text(r[12]);
    run.receipt_path = text(r[13]);
    out.push_back(std::move(run));
  }
  for (auto& run : out) {
    std::string seq = std::to_string(run.seq);
    if (o.with_inputs) {
      auto in = SEALRUN_TRY(db.query(
          "SELECT kind, name, uri, algorithm, digest FROM inputs WHERE node = $1 AND seq = $2 "
          "ORDER BY ordinal",
          {run.node, seq}));
      for (const auto& r : in.rows)
        run.inputs.push_back({text(r[0]), text(r[1]), text(r[2]), text(r[3]), text(r[4])});
    }
    if (f.output_sha256) {
      auto outs = SEALRUN_TRY(db.query(
          "SELECT path, size, sha256 FROM outputs WHERE node = $1 AND seq = $2 AND sha256 = $3 "
          "ORDER BY path",
          {run.node, seq, *f.output_sha256}));
      for (const auto& r : outs.rows)
        run.outputs.push_back({text(r[0]), r[1] ? std::stoull(*r[1]) : 0, text(r[2])});
    }
  }
  return out;
}

Result<std::vector<NodeSummary>> list_nodes(Db& db) {
  auto rows = SEALRUN_TRY(
      db.query("SELECT n.node, n.key_id, n.ledger_head_sha256, n.registered_at, n.ingested_at, "
               "n.ledger_length, (SELECT count(*) FROM runs r WHERE r.node = n.node) FROM nodes n "
               "ORDER BY n.node",
               {}));
  std::vector<NodeSummary> out;
  for (const auto& r : rows.rows) {
    NodeSummary n{text(r[0]),
                  text(r[1]),
                  text(r[2]),
                  text(r[3]),
                  text(r[4]),
                  std::stoull(text(r[5])),
                  std::stoull(text(r[6])),
                  {}};
    auto problems = SEALRUN_TRY(
        db.query("SELECT what FROM ingest_problems WHERE node = $1 ORDER BY first_seen", {n.node}));
    for (const auto& p : problems.rows) n.problems.push_back(text(p[0]));
    out.push_back(std::move(n));
  }
  return out;
}

}  // namespace sealrun::index
