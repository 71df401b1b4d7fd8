// `sealrun receipt verify RECEIPT [--key PUB] [--outputs DIR] [--strict] [--json]` and
// `sealrun receipt verify --ledger STATE_DIR [--key PUB]`: every check printed (pass, FAIL, or a
// note saying what was not checked); exit 0 only when none failed.
#include <fcntl.h>
#include <fmt/format.h>

#include "controller/commands.h"
#include "controller/exit_codes.h"
#include "controller/output.h"
#include "controller/receipt.h"
#include "controller/receipt_checks.h"
#include "core/bounded_file.h"
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
  bool strict = false;
  bool json = false;
};

Result<std::vector<Check>> run_checks(const VerifyOptions& o) {
  std::vector<Check> checks;
  if (!o.receipt.empty()) {
    std::string bytes =
        SEALRUN_TRY(read_bounded_file(AT_FDCWD, o.receipt, kMiB).context("read receipt"));
    checks = receipt::from_findings(SEALRUN_TRY(receipt::verify_receipt_bytes(bytes)));
    json doc = SEALRUN_TRY(parse_strict_json(bytes));
    for (auto& c : receipt::check_signature(o.receipt, bytes, doc, o.key)) checks.push_back(c);
    if (!o.outputs.empty())
      for (auto& c : receipt::check_outputs_on_disk(o.receipt, doc, o.outputs))
        checks.push_back(c);
    else
      checks.push_back({"outputs on disk", Verdict::kNote,
                        "not checked: give --outputs DIR to re-hash the outputs"});
    if (o.strict)
      for (auto& c : receipt::check_strict(doc)) checks.push_back(c);
  }
  if (!o.ledger.empty())
    for (auto& c : receipt::check_ledger(o.ledger, o.key)) checks.push_back(c);
  return checks;
}

const char* verdict_name(Verdict v) {
  return v == Verdict::kPass ? "pass" : v == Verdict::kFail ? "FAIL" : "note";
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
  cmd->add_flag("--strict", o->strict, "also fail report-only runs and degraded dimensions");
  cmd->add_flag("--json", o->json, "one JSON array of {check, result, detail}");
  cmd->callback([o, exit_code] {
    if (o->receipt.empty() && o->ledger.empty()) {
      print_error("receipt verify", "give a RECEIPT, or --ledger STATE_DIR (or both)");
      *exit_code = kExitUsage;
      return;
    }
    auto checks = run_checks(*o);
    if (!checks) {
      print_error("receipt verify", checks.error());
      *exit_code = kExitFailure;
      return;
    }
    bool failed = false;
    json items = json::array();
    for (const auto& c : *checks) {
      failed = failed || c.verdict == Verdict::kFail;
      items.push_back({{"check", c.check}, {"result", verdict_name(c.verdict)}, {"detail", c.detail}});
      if (!o->json) fmt::print("{:<4}  {:<28} {}\n", verdict_name(c.verdict), c.check, c.detail);
    }
    if (o->json) print_json(items);
    *exit_code = failed ? kExitFailure : kExitOk;
  });
}

}  // namespace sealrun::cli
