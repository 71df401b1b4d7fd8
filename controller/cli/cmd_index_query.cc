// SPDX-License-Identifier: Apache-2.0
// `sealrun index query [--output-sha256 HEX] [--input-sha256 HEX] [--admission HEX] [--state S]
// [--node N] [--since RFC3339] [--db URL] [--json]`: the auditor's questions (docs/audit.md).
// Filters combine; none lists every run. A table for people — one line per run, and under it the
// inputs (all of them when asked by output: what made this file; the matching ones when asked by
// input) and the matching outputs — or one JSON document for scripts. Everything the index holds
// came from receipts, which a job partly wrote (its command, its output names): it is escaped for
// the terminal like `receipt show` does.
#include <fmt/format.h>

#include <memory>

#include "admission/document.h"
#include "attest/ledger_line.h"
#include "controller/cli/cmd_index_common.h"
#include "controller/cli/commands.h"
#include "controller/cli/printing.h"
#include "controller/common/display_text.h"
#include "core/exit_codes.h"
#include "core/hex.h"
#include "index/query.h"
#include "index/record.h"

namespace sealrun::cli {

using nlohmann::json;

namespace {

struct QueryArgs {
  std::string output_sha256, input_sha256, admission, state, node, since, db;
  bool json = false;
};

json run_json(const index::IndexedRun& r) {
  json inputs = json::array();
  for (const auto& i : r.inputs)
    inputs.push_back({{"kind", i.kind},
                      {"name", i.name},
                      {"uri", i.uri},
                      {"algorithm", i.algorithm},
                      {"digest", i.digest}});
  json outputs = json::array();
  for (const auto& o : r.outputs)
    outputs.push_back({{"path", o.path}, {"size", o.size}, {"sha256", o.sha256}});
  json command = r.command.empty() ? json(nullptr) : json::parse(r.command, nullptr, false);
  if (command.is_discarded()) command = r.command;
  return {{"node", r.node},
          {"seq", r.seq},
          {"id", r.id},
          {"state", r.state},
          {"exit", r.exit_code ? json(*r.exit_code) : json(nullptr)},
          {"reason", r.reason},
          {"started", r.started},
          {"finished", r.finished},
          {"ledger_at", r.ledger_at},
          {"signer", r.signer ? json(*r.signer) : json(nullptr)},
          {"admission_sha256", r.admission_sha256},
          {"command", command},
          {"receipt_sha256", r.receipt_sha256},
          {"receipt_path", r.receipt_path},
          {"inputs", inputs},
          {"outputs", outputs}};
}

std::string command_text(const std::string& argv_json) {
  json argv = json::parse(argv_json, nullptr, false);
  if (!argv.is_array()) return display::escape_cut(argv_json, 60);
  std::string out;
  for (const auto& a : argv) out += (out.empty() ? "" : " ") + a.get<std::string>();
  return display::escape_cut(out, 60);
}

void print_table(const std::vector<index::IndexedRun>& runs, const index::QueryFilter& f) {
  if (!runs.empty())
    fmt::print("{:<24}  {:<12} {:>6}  {:<20} {:<8} {:<12} {:<12} {}\n", "FINISHED", "NODE", "SEQ",
               "ID", "STATE", "SIGNER", "ADMISSION", "COMMAND");
  for (const auto& r : runs) {
    fmt::print("{:<24}  {:<12} {:>6}  {:<20} {:<8} {:<12} {:<12} {}\n",
               r.finished.empty() ? "-" : display::escape(r.finished), display::escape(r.node),
               r.seq, display::escape(r.id), display::escape(r.state),
               r.signer ? r.signer->substr(0, 12) : "unsigned",
               r.admission_sha256.empty() ? "-" : r.admission_sha256.substr(0, 12),
               r.command.empty() ? "-" : command_text(r.command));
    for (const auto& o : r.outputs)
      fmt::print("    output  {} ({} bytes)\n", display::escape_cut(o.path, 200), o.size);
    for (const auto& i : r.inputs) {
      if (f.input_sha256 && i.digest != *f.input_sha256) continue;
      if (!f.input_sha256 && !f.output_sha256) continue;
      fmt::print("    input   {:<10} {} {}:{}\n", display::escape(i.kind),
                 display::escape_cut(i.name, 120), display::escape(i.algorithm), i.digest);
    }
  }
  fmt::print("{} run(s)\n", runs.size());
}

// A digest option's value, normalised; nullopt when not given. Sets *bad on a malformed one.
std::optional<std::string> digest_option(const std::string& value, const char* option,
                                         std::string* bad) {
  if (value.empty()) return std::nullopt;
  std::string hex = index::normalize_digest(value);
  if (!is_sha256_hex(hex))
    *bad = fmt::format("{} {:?}: expected a SHA-256, 64 hex digits (\"sha256:\" may precede it)",
                       option, value);
  return hex;
}

void run_query(const QueryArgs& a, int* exit_code) {
  const char* kCmd = "index query";
  index::QueryFilter f;
  std::string bad;
  f.output_sha256 = digest_option(a.output_sha256, "--output-sha256", &bad);
  f.input_sha256 = digest_option(a.input_sha256, "--input-sha256", &bad);
  f.admission_sha256 = digest_option(a.admission, "--admission", &bad);
  if (!a.state.empty()) f.state = a.state;
  if (!a.node.empty()) f.node = a.node;
  if (!a.since.empty()) {
    auto t = admission::parse_rfc3339(a.since);
    if (!t)
      bad = fmt::format("--since {:?}: expected an RFC 3339 time, e.g. 2026-11-30T12:00:00Z",
                        a.since);
    else
      f.since = attest::ledger_timestamp(static_cast<int64_t>(*t));
  }
  if (!bad.empty()) {
    print_error(kCmd, bad);
    *exit_code = kExitUsage;
    return;
  }
  std::string url = a.db.empty() ? kDefaultIndexUrl : a.db;
  auto db = open_index(url, /*create=*/false);
  auto runs = db ? index::query_runs(**db, f) : Result<std::vector<index::IndexedRun>>(db.error());
  if (!runs) {
    print_error(kCmd, runs.error());
    *exit_code = kExitFailure;
    return;
  }
  if (a.json) {
    json list = json::array();
    for (const auto& r : *runs) list.push_back(run_json(r));
    print_json({{"db", index::redact_url(url)}, {"count", runs->size()}, {"runs", list}});
  } else {
    print_table(*runs, f);
  }
  *exit_code = kExitOk;
}

}  // namespace

void add_index_query(CLI::App& parent, int* exit_code) {
  auto* cmd = parent.add_subcommand(
      "query", "Ask the index: the runs that produced or consumed a digest, by node, state, time");
  auto a = std::make_shared<QueryArgs>();
  cmd->add_option("--output-sha256", a->output_sha256,
                  "runs that produced a file with this SHA-256")
      ->type_name("HEX");
  cmd->add_option("--input-sha256", a->input_sha256,
                  "runs that pinned this digest (toolchain, tree, closure file, source, image...)")
      ->type_name("HEX");
  cmd->add_option("--admission", a->admission, "runs of the admission with this SHA-256")
      ->type_name("HEX");
  cmd->add_option("--state", a->state, "only runs in this state")
      ->check(CLI::IsMember({"built", "failed", "not_run"}));
  cmd->add_option("--node", a->node, "only runs of this node")->type_name("NODE");
  cmd->add_option("--since", a->since, "only runs finished at or after this RFC 3339 time")
      ->type_name("RFC3339");
  cmd->add_option("--db", a->db,
                  std::string("the index: sqlite:PATH or postgresql://... (default: ") +
                      kDefaultIndexUrl + ")")
      ->type_name("URL");
  cmd->add_flag("--json", a->json, "one JSON document: {db, count, runs}");
  cmd->callback([a, exit_code] { run_query(*a, exit_code); });
}

}  // namespace sealrun::cli
