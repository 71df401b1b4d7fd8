// SPDX-License-Identifier: Apache-2.0
// `sealrun receipt show|verify|diff|export`: reviewing receipts without trusting them — each is
// read bounded (≤ 1 MiB, no symlink) and parsed strictly before anything is shown.
#include <fcntl.h>
#include <fmt/format.h>

#include <map>

#include "attest/keys.h"
#include "attest/provenance.h"
#include "controller/cli/commands.h"
#include "controller/cli/printing.h"
#include "controller/common/display_text.h"
#include "controller/receipt/output_compare.h"
#include "controller/receipt/receipt.h"
#include "controller/receipt/receipt_diff.h"
#include "controller/receipt/receipt_review.h"
#include "controller/receipt/receipt_review_io.h"
#include "core/bounded_file.h"
#include "core/exit_codes.h"
#include "core/strict_json.h"

namespace sealrun::cli {

using nlohmann::json;

namespace {

Result<std::string> load_bytes(const std::string& path) {
  return read_bounded_file(AT_FDCWD, path, kMiB).context("read receipt");
}

Result<json> load(const std::string& path) {
  auto bytes = SEALRUN_TRY(load_bytes(path));
  return parse_strict_json(bytes).context(path + " is not a readable receipt");
}

void add_show(CLI::App& parent, int* exit_code) {
  auto* cmd = parent.add_subcommand("show", "A summary of a receipt for a person");
  auto path = std::make_shared<std::string>();
  auto as_json = std::make_shared<bool>(false);
  cmd->add_option("RECEIPT", *path, "receipt.json")->required();
  cmd->add_flag("--json", *as_json, "print the receipt itself, pretty-printed");
  auto verbose = std::make_shared<bool>(false);
  auto key = std::make_shared<std::string>();
  cmd->add_flag("--verbose", *verbose, "everything: every input, view entry, output, sample");
  cmd->add_option("--key", *key,
                  "public key the signature is checked with (default: STATE/keys/sealrun.pub "
                  "when the receipt is in a state directory that has one)");
  cmd->callback([=] {
    auto doc = load(*path);
    if (!doc) {
      print_error("receipt show", doc.error());
      *exit_code = kExitFailure;
      return;
    }
    if (*as_json)
      print_json(*doc);
    else
      fmt::print("{}", receipt::show_receipt(*path, *doc, *verbose, *key));
    *exit_code = kExitOk;
  });
}

void add_diff(CLI::App& parent, int* exit_code) {
  auto* cmd = parent.add_subcommand(
      "diff",
      "Same run? Compares two receipts field by field (digests at every depth, arrays matched by "
      "identity) and says whether the inputs, the environment and the outputs are the same; "
      "fields that differ in every run (ids, times, pids, cache hits) are left out unless --all. "
      "Exit 0 when all three are the same, 1 when they differ, 2 when a receipt cannot be read");
  auto a = std::make_shared<std::string>();
  auto b = std::make_shared<std::string>();
  auto all = std::make_shared<bool>(false);
  auto as_json = std::make_shared<bool>(false);
  cmd->add_option("A", *a, "first receipt")->required();
  cmd->add_option("B", *b, "second receipt")->required();
  cmd->add_flag("--all", *all,
                "list the per-run differences too (ids, times, pids, cache hits, paths that "
                "differ only by the run id); they never change the verdict");
  cmd->add_flag("--json", *as_json,
                "one JSON document: {same, same_inputs, same_environment, same_outputs, verdict, "
                "per_run_left_out, differences: [{path, class, change, a, b}]}");
  cmd->callback([=] {
    // The comparison could not be made: not a verdict, so not exit 1.
    auto fail = [&](const Error& e) {
      print_error("receipt diff", e);
      if (*as_json) print_json({{"error", e.message()}, {"exit", kExitUsage}});
      *exit_code = kExitUsage;
    };
    auto da = load(*a);
    if (!da) return fail(da.error());
    auto db = load(*b);
    if (!db) return fail(db.error());
    // Outputs are compared over the complete lists (outputs.jsonl, checked against the receipt),
    // by path, as `rebuild` compares them (output_compare.h).
    auto la = receipt::load_output_list(*a, *da, true);
    if (!la) return fail(la.error());
    auto lb = receipt::load_output_list(*b, *db, true);
    if (!lb) return fail(lb.error());
    if (da->is_object()) (*da)["outputs"] = json(*la);
    if (db->is_object()) (*db)["outputs"] = json(*lb);
    auto result = receipt::diff::compare(*da, *db, *all);
    if (*as_json)
      print_json(receipt::diff::to_json(result));
    else
      fmt::print("{}", receipt::diff::to_text(result, *all));
    *exit_code = result.same() ? kExitOk : kExitFailure;
  });
}

void add_export(CLI::App& parent, int* exit_code) {
  auto* cmd = parent.add_subcommand(
      "export",
      "Export a receipt as an in-toto Statement v1 with SLSA provenance v1 (docs/build-type.md); "
      "only a `built` receipt unless --include-failed");
  auto path = std::make_shared<std::string>();
  auto include_failed = std::make_shared<bool>(false);
  auto sign = std::make_shared<std::string>();
  cmd->add_option("RECEIPT", *path, "receipt.json")->required();
  cmd->add_flag("--include-failed", *include_failed,
                "export a receipt that is not `built` too (its state, exit and reason are "
                "recorded, under sealrun's unsuccessful-builder id)");
  cmd->add_option("--sign", *sign,
                  "Ed25519 signing key: print a DSSE envelope (application/vnd.in-toto+json)");
  // The statement is JSON already; the flag is accepted so scripts can pass it to every command.
  auto as_json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *as_json, "the output is one JSON document (always)");
  cmd->callback([=] {
    auto fail = [&](const Error& e) {
      print_error("receipt export", e);
      *exit_code = kExitFailure;
    };
    auto bytes = load_bytes(*path);
    if (!bytes) return fail(bytes.error());
    auto findings = receipt::verify_receipt_bytes(*bytes);
    if (!findings) return fail(findings.error());
    for (const auto& f : *findings)
      if (!f.pass)
        return fail(
            Error::make(fmt::format("the receipt does not verify ({}: {}); run `sealrun "
                                    "receipt verify` for details",
                                    display::escape(f.check), display::escape(f.detail))));
    attest::ExportOptions opts;
    opts.include_failed = *include_failed;
    Result<std::string> out = Error::make("unreachable");
    if (sign->empty()) {
      out = attest::export_statement(*bytes, opts);
    } else {
      auto key = attest::load_signing_key(*sign);
      if (!key) return fail(std::move(key).error().context("--sign"));
      out = attest::export_signed_statement(*bytes, opts, *key);
    }
    if (!out) return fail(out.error());
    // The same JSON with C1 controls and bidirectional marks as \uNNNN (display_text.h).
    fmt::print("{}", display::json_for_terminal(*out));
    note_json_document_printed();
    *exit_code = kExitOk;
  });
}

}  // namespace

void register_receipt(CLI::App& app, int* exit_code) {
  auto* cmd =
      app.add_subcommand("receipt", "Review receipts: show, verify, diff, export, list, report");
  cmd->require_subcommand(1);
  add_show(*cmd, exit_code);
  add_receipt_verify(*cmd, exit_code);
  add_receipt_list(*cmd, exit_code);
  add_diff(*cmd, exit_code);
  add_export(*cmd, exit_code);
  add_receipt_report(*cmd, exit_code);
}

}  // namespace sealrun::cli
