// SPDX-License-Identifier: Apache-2.0
// `sealrun index ingest STATE_DIR... [--db URL] [--key NODE=PUB ...] [--json]`: the receipts of
// one or many nodes' state directories into the fleet index (index/ingest.h), each verified first.
// The `index` command itself, and its `query` (cmd_index_query.cc) and `report`
// (cmd_index_report.cc). A node's name is the NODE of the --key that goes with its state
// directory — the --key whose NODE is the directory's basename, or the only --key when one state
// directory is given — else the directory's basename (docs/audit.md). Exit 0 when every node was
// indexed whole, 1 when something was refused (and reported), 2 for a usage error.
#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include "attest/keys.h"
#include "controller/cli/cmd_index_common.h"
#include "controller/cli/commands.h"
#include "controller/cli/printing.h"
#include "controller/common/display_text.h"
#include "core/exit_codes.h"
#include "index/ingest.h"
#include "index/schema.h"

namespace sealrun::cli {

using nlohmann::json;

namespace {

struct IngestArgs {
  std::vector<std::string> state_dirs;
  std::string db;
  std::vector<std::string> keys;
  bool json = false;
};

std::string basename_of(const std::string& dir) {
  std::filesystem::path p(dir);
  p = p.lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  std::string name = p.filename().string();
  return name.empty() || name == "." || name == ".." ? "" : name;
}

// The --key values as node -> key; the nodes of the state directories by the rule above.
Result<std::vector<index::NodeSource>> plan_nodes(const IngestArgs& a) {
  std::map<std::string, attest::PublicKey> keys;
  std::vector<std::string> key_order;
  for (const auto& k : a.keys) {
    auto eq = k.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == k.size())
      return Error::make(
          fmt::format("--key {:?}: expected NODE=PUB (a node's name and its "
                      "public key file, sealrun.pub)",
                      k));
    std::string node = k.substr(0, eq);
    auto pub = attest::load_public_key(k.substr(eq + 1));
    if (!pub) return std::move(pub).error().context("--key " + node);
    if (!keys.emplace(node, std::move(*pub)).second)
      return Error::make("--key " + node + "=...: given twice");
    key_order.push_back(node);
  }
  std::vector<index::NodeSource> out;
  std::set<std::string> used_keys, names;
  for (const auto& dir : a.state_dirs) {
    std::string node = basename_of(dir);
    if (a.state_dirs.size() == 1 && keys.size() == 1) node = key_order.front();
    if (node.empty())
      return Error::make(
          fmt::format("{:?}: no basename to name the node by: give --key NODE=PUB", dir));
    if (!names.insert(node).second)
      return Error::make(fmt::format(
          "two state directories are both node {:?}: ingest them separately, or rename one", node));
    // Absolute: the index records where each receipt was read, for the report to find it again.
    std::error_code ec;
    std::string absolute = std::filesystem::absolute(dir, ec).lexically_normal().string();
    if (ec || absolute.empty()) absolute = dir;
    if (absolute.size() > 1 && absolute.back() == '/') absolute.pop_back();
    index::NodeSource s{node, absolute, std::nullopt};
    if (auto it = keys.find(node); it != keys.end()) {
      s.key = it->second;
      used_keys.insert(node);
    }
    out.push_back(std::move(s));
  }
  for (const auto& k : key_order)
    if (!used_keys.count(k))
      return Error::make(fmt::format(
          "--key {}=...: no state directory given is node {:?} (a node is named by its state "
          "directory's basename)",
          k, k));
  return out;
}

json outcome_json(const index::NodeOutcome& o) {
  return {{"node", o.node},
          {"state_dir", o.state_dir},
          {"ok", o.ok()},
          {"indexed", o.indexed},
          {"already", o.already},
          {"ledger_lines", o.ledger_lines},
          {"head_length", o.head_length},
          {"head_sha256", o.head_sha256},
          {"key_id", o.key_id.empty() ? json(nullptr) : json(o.key_id)},
          {"problems", o.problems}};
}

void run_ingest(const IngestArgs& a, int* exit_code) {
  const char* kCmd = "index ingest";
  auto nodes = plan_nodes(a);
  if (!nodes) {
    print_error(kCmd, nodes.error());
    *exit_code = kExitUsage;
    return;
  }
  std::string url = a.db.empty() ? "sqlite:" + a.state_dirs.front() + "/index.sqlite" : a.db;
  auto db = open_index(url, /*create=*/true);
  if (!db) {
    print_error(kCmd, db.error());
    *exit_code = kExitFailure;
    return;
  }
  json results = json::array();
  bool all_ok = true;
  for (const auto& node : *nodes) {
    auto o = index::ingest_node(**db, node);
    if (!o) {
      print_error(kCmd, o.error());
      *exit_code = kExitFailure;
      return;
    }
    all_ok = all_ok && o->ok();
    for (const auto& p : o->problems)
      print_error(kCmd, fmt::format("node {}: REFUSED: {}", o->node, p));
    if (!a.json)
      fmt::print("{} ({}): {} run(s) indexed, {} before; ledger {} line(s), index head {}{}\n",
                 o->node, display::escape(o->state_dir), o->indexed, o->already, o->ledger_lines,
                 o->head_length, o->ok() ? "" : " — REFUSED (see above)");
    results.push_back(outcome_json(*o));
  }
  *exit_code = all_ok ? kExitOk : kExitFailure;
  // On failure the document also says so the way every failing --json does (json_failure.h).
  std::string first;
  for (const auto& n : results)
    if (first.empty() && !n["problems"].empty())
      first = "node " + n["node"].get<std::string>() + ": " + n["problems"][0].get<std::string>();
  if (a.json)
    print_json({{"db", index::redact_url(url)},
                {"ok", all_ok},
                {"exit", *exit_code},
                {"error", first.empty() ? json(nullptr) : json(first)},
                {"nodes", results}});
}

}  // namespace

Result<std::unique_ptr<index::Db>> open_index(const std::string& url, bool create) {
  auto db = SEALRUN_TRY(index::open_db(url, create));
  SEALRUN_TRY_CTX(index::migrate(*db), index::redact_url(url));
  return db;
}

void register_index(CLI::App& app, int* exit_code) {
  auto* index = app.add_subcommand(
      "index", "The fleet index: every node's verified receipts in one database, asked by digest");
  index->require_subcommand(1);
  auto* cmd = index->add_subcommand(
      "ingest", "Verify and index the receipts of state directories (signature, ledger head, ids)");
  auto a = std::make_shared<IngestArgs>();
  cmd->add_option("STATE_DIR", a->state_dirs, "state directories (a node's, or copies of them)")
      ->required();
  cmd->add_option("--db", a->db,
                  "the index: sqlite:PATH or postgresql://... (default: sqlite:STATE_DIR/"
                  "index.sqlite of the first)")
      ->type_name("URL");
  cmd->add_option("--key", a->keys,
                  "a node's public key, registered on its first ingest (repeatable)")
      ->type_name("NODE=PUB");
  cmd->add_flag("--json", a->json, "one JSON document: {db, ok, exit, error, nodes}");
  cmd->callback([a, exit_code] { run_ingest(*a, exit_code); });
  add_index_query(*index, exit_code);
  add_index_report(*index, exit_code);
}

}  // namespace sealrun::cli
