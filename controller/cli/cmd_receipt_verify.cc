// SPDX-License-Identifier: Apache-2.0
// `sealrun receipt verify RECEIPT [--key PUB] [--outputs DIR] [--strict] [--json]` and
// `sealrun receipt verify --ledger STATE_DIR [--key PUB] [--checkpoint FILE] [--from SEQ]`: every
// check printed (pass, FAIL, or a note saying what was not checked); exit 0 only when none failed.
// Every check's name and detail may quote the receipt (its reason, its paths, its labels), which
// the job shaped: each is escaped (display_text.h) and printed on one line, so no string of the
// receipt can move the cursor or forge a line such as "pass  signature ...".
#include <fcntl.h>
#include <fmt/format.h>

#include "controller/cli/commands.h"
#include "controller/cli/printing.h"
#include "controller/common/display_text.h"
#include "controller/receipt/ledger_audit.h"
#include "controller/receipt/receipt.h"
#include "controller/receipt/receipt_checks.h"
#include "core/bounded_file.h"
#include "core/exit_codes.h"
#include "core/strict_json.h"

namespace sealrun::cli {

using nlohmann::json;
using receipt::Check;
using receipt::Verdict;

namespace {

struct VerifyOptions {
  std::string receipt;
  std::string key;
  std::string outputs;
  std::string ledger;
  std::string checkpoint;
  uint64_t from = 1;
  bool strict = false;
  bool json = false;
};

struct Verified {
  std::vector<Check> checks;
  receipt::LedgerAudit ledger;
};

Result<Verified> run_checks(const VerifyOptions& o) {
  Verified v;
  auto& checks = v.checks;
  if (!o.receipt.empty()) {
    std::string bytes =
        SEALRUN_TRY(read_bounded_file(AT_FDCWD, o.receipt, kMiB).context("read receipt"));
    checks = receipt::from_findings(SEALRUN_TRY(receipt::verify_receipt_bytes(bytes)));
    json doc = SEALRUN_TRY(parse_strict_json(bytes));
    checks.push_back(receipt::check_receipt_place(o.receipt, doc));
    for (auto& c : receipt::check_signature(o.receipt, bytes, doc, o.key)) checks.push_back(c);
    if (!o.outputs.empty())
      for (auto& c : receipt::check_outputs_on_disk(o.receipt, doc, o.outputs)) checks.push_back(c);
    else
      checks.push_back({"outputs on disk", Verdict::kNote,
                        "not checked: give --outputs DIR to re-hash the outputs"});
    if (o.strict)
      for (auto& c : receipt::check_strict(doc)) checks.push_back(c);
  }
  if (!o.ledger.empty()) {
    v.ledger = receipt::audit_ledger({o.ledger, o.key, o.checkpoint, o.from});
    for (auto& c : v.ledger.checks) checks.push_back(c);
  }
  return v;
}

const char* verdict_name(Verdict v) {
  return v == Verdict::kPass ? "pass" : v == Verdict::kFail ? "FAIL" : "note";
}

// In JSON, lower case like every other result field: "pass", "fail", "note".
const char* json_verdict(Verdict v) {
  return v == Verdict::kPass ? "pass" : v == Verdict::kFail ? "fail" : "note";
}

}  // namespace

void add_receipt_verify(CLI::App& parent, int* exit_code) {
  auto* cmd = parent.add_subcommand(
      "verify",
      "Check a receipt: its digest and consistency, its signature (--key), its outputs on disk "
      "(--outputs), how it ran (--strict); or a whole ledger (--ledger). Exit 0: nothing failed");
  auto o = std::make_shared<VerifyOptions>();
  cmd->add_option("RECEIPT", o->receipt, "receipt.json");
  cmd->add_option("--key", o->key, "public key (sealrun.pub): the receipt's envelope must verify");
  cmd->add_option("--outputs", o->outputs,
                  "directory holding the outputs (results/<id>/out): re-hash every one");
  cmd->add_option("--ledger", o->ledger,
                  "state directory: check STATE/ledger.jsonl's chain and every receipt it lists");
  cmd->add_option("--checkpoint", o->checkpoint,
                  "with --ledger: a checkpoint (`sealrun ledger checkpoint`) the ledger must "
                  "still extend: fails when it was truncated, rolled back or rewritten");
  cmd->add_option("--from", o->from,
                  "with --ledger: read the receipts of lines from this seq on (the chain is "
                  "checked whole)")
      ->type_name("SEQ")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--strict", o->strict, "also fail report-only runs and degraded dimensions");
  cmd->add_flag("--json", o->json,
                "one JSON object: {ok, checks: [{check, result, detail}], and with --ledger "
                "length, head_seq, head_sha256}");
  cmd->callback([o, exit_code] {
    if (o->receipt.empty() && o->ledger.empty()) {
      print_error("receipt verify", "give a RECEIPT, or --ledger STATE_DIR (or both)");
      *exit_code = kExitUsage;
      return;
    }
    if (o->ledger.empty() && (!o->checkpoint.empty() || o->from != 1)) {
      print_error("receipt verify", "--checkpoint and --from apply to --ledger STATE_DIR");
      *exit_code = kExitUsage;
      return;
    }
    auto checks = run_checks(*o);
    if (!checks) {
      print_error("receipt verify", checks.error());
      *exit_code = kExitFailure;
      return;
    }
    size_t failed = 0;
    json items = json::array();
    for (const auto& c : checks->checks) {
      failed += c.verdict == Verdict::kFail ? 1 : 0;
      items.push_back(
          {{"check", c.check}, {"result", json_verdict(c.verdict)}, {"detail", c.detail}});
      if (!o->json)
        fmt::print("{:<4}  {:<28} {}\n", verdict_name(c.verdict), display::escape(c.check),
                   display::escape(c.detail));
    }
    *exit_code = failed > 0 ? kExitFailure : kExitOk;
    if (o->json) {
      json doc = {{"ok", failed == 0}, {"exit", *exit_code}, {"checks", std::move(items)}};
      if (failed > 0) doc["error"] = fmt::format("{} check(s) failed", failed);
      if (checks->ledger.read) {
        doc["length"] = checks->ledger.length;
        doc["head_seq"] = checks->ledger.head_seq;
        doc["head_sha256"] = checks->ledger.head_sha256;
      }
      print_json(doc);
    }
  });
}

}  // namespace sealrun::cli
