// SPDX-License-Identifier: Apache-2.0
// `sealrun receipt list [--state-dir DIR] [--state built|failed|not_run] [--since RFC3339]
// [--json]`: the receipts a state directory's ledger records, newest last, with where each is.
// The ledger's chain is checked on the way; a broken chain is said loudly (exit 1).
#include <fmt/format.h>

#include "admission/document.h"
#include "attest/ledger.h"
#include "controller/cli/commands.h"
#include "controller/cli/printing.h"
#include "core/exit_codes.h"

namespace sealrun::cli {

using nlohmann::json;

void add_receipt_list(CLI::App& parent, int* exit_code) {
  auto* cmd = parent.add_subcommand(
      "list", "List the receipts a state directory's ledger records (oldest first)");
  auto state_dir = std::make_shared<std::string>("sealrun-state");
  auto state = std::make_shared<std::string>();
  auto since = std::make_shared<std::string>();
  auto id = std::make_shared<std::string>();
  auto as_json = std::make_shared<bool>(false);
  cmd->add_option("--state-dir", *state_dir, "the state directory")->capture_default_str();
  cmd->add_option("--state", *state, "only receipts in this state")
      ->check(CLI::IsMember({"built", "failed", "not_run"}));
  cmd->add_option("--since", *since, "only receipts written at or after this RFC 3339 time");
  cmd->add_option("--id", *id, "only this run id");
  cmd->add_flag("--json", *as_json, "one JSON document: {entries, chain_ok, problem}");
  cmd->callback([=] {
    attest::LedgerFilter filter;
    if (!state->empty()) filter.state = *state;
    if (!id->empty()) filter.id = *id;
    if (!since->empty()) {
      auto t = admission::parse_rfc3339(*since);
      if (!t) {
        print_error("receipt list", fmt::format("--since {:?}: expected an RFC 3339 time, e.g. "
                                                "2026-11-30T12:00:00Z",
                                                *since));
        *exit_code = kExitUsage;
        return;
      }
      filter.since_unix_s = static_cast<int64_t>(*t);
    }
    auto dir = attest::open_state_dir(*state_dir);
    auto listing =
        dir ? attest::list_ledger(dir->get(), filter) : Result<attest::LedgerListing>(dir.error());
    if (!listing) {
      print_error("receipt list", listing.error());
      *exit_code = kExitFailure;
      return;
    }
    const auto& rep = listing->report;
    std::string problem =
        rep.ok() ? ""
        : rep.first_problem
            ? fmt::format("line {}: {}", rep.first_problem->line, rep.first_problem->what)
            : fmt::format("{} torn byte(s) after the last line", rep.torn_bytes);
    if (*as_json) {
      json entries = json::array();
      for (const auto& e : listing->entries)
        entries.push_back({{"seq", e.seq},
                           {"id", e.id},
                           {"state", e.state},
                           {"at", e.at},
                           {"receipt_sha256", e.receipt_sha256}});
      print_json({{"state_dir", *state_dir},
                  {"entries", entries},
                  {"chain_ok", rep.ok()},
                  {"problem", problem.empty() ? json(nullptr) : json(problem)}});
    } else {
      for (const auto& e : listing->entries)
        fmt::print("{:>6}  {}  {:<8} {}  sha256:{}\n", e.seq, e.at, e.state, e.id,
                   e.receipt_sha256.substr(0, 16));
      if (listing->entries.empty()) fmt::print("no receipts recorded in {}\n", *state_dir);
    }
    if (!rep.ok())
      print_error("receipt list", "the ledger's chain is broken (" + problem +
                                      "); run `sealrun receipt verify --ledger " + *state_dir +
                                      "`");
    *exit_code = rep.ok() ? kExitOk : kExitFailure;
  });
}

}  // namespace sealrun::cli
