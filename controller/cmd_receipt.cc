// `sealrun receipt show|verify|diff|export`: reviewing receipts without trusting them — each is
// read bounded (≤ 1 MiB, no symlink) and parsed strictly before anything is shown.
#include <fcntl.h>
#include <fmt/format.h>

#include <map>

#include "attest/keys.h"
#include "attest/provenance.h"
#include "controller/commands.h"
#include "controller/exit_codes.h"
#include "controller/output.h"
#include "controller/output_compare.h"
#include "controller/receipt.h"
#include "controller/receipt_review.h"
#include "controller/receipt_review_io.h"
#include "core/bounded_file.h"
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
      "Stable diff of two receipts (timings and samples left out unless --timings); exit 0 "
      "when they agree, 1 when they differ");
  auto a = std::make_shared<std::string>();
  auto b = std::make_shared<std::string>();
  auto timings = std::make_shared<bool>(false);
  auto as_json = std::make_shared<bool>(false);
  cmd->add_option("A", *a, "first receipt")->required();
  cmd->add_option("B", *b, "second receipt")->required();
  cmd->add_flag("--timings", *timings, "compare timestamps, durations and census samples too");
  cmd->add_flag("--json", *as_json, "the differences as a JSON array");
  cmd->callback([=] {
    auto da = load(*a);
    auto db = load(*b);
    if (!da || !db) {
      print_error("receipt diff", !da ? da.error() : db.error());
      *exit_code = kExitFailure;
      return;
    }
    // Outputs are compared by path over the complete lists, by the code `rebuild` uses
    // (output_compare.h), so the two agree; the other fields field by field.
    auto la = receipt::load_output_list(*a, *da, true);
    auto lb = receipt::load_output_list(*b, *db, true);
    if (!la || !lb) {
      print_error("receipt diff", !la ? la.error() : lb.error());
      *exit_code = kExitFailure;
      return;
    }
    auto changes = receipt::compare_outputs(*la, *lb);
    std::vector<receipt::Difference> diffs;
    for (auto& d : receipt::diff_receipts(*da, *db, *timings))
      if (d.path.rfind("outputs[", 0) != 0) diffs.push_back(std::move(d));
    if (*as_json) {
      json items = json::array();
      for (const auto& d : diffs) items.push_back({{"path", d.path}, {"a", d.a}, {"b", d.b}});
      for (const auto& c : changes) {
        json item = receipt::change_json(c);
        item["path"] = "outputs[" + item["path"].get<std::string>() + "]";
        items.push_back(std::move(item));
      }
      print_json(items);
    } else {
      for (const auto& d : diffs) fmt::print("{}\n  - {}\n  + {}\n", d.path, d.a, d.b);
      for (const auto& c : changes) fmt::print("output {}\n", receipt::change_text(c));
    }
    *exit_code = diffs.empty() && changes.empty() ? kExitOk : kExitFailure;
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
        return fail(Error::make(fmt::format("the receipt does not verify ({}: {}); run `sealrun "
                                            "receipt verify` for details",
                                            f.check, f.detail)));
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
    fmt::print("{}", *out);
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
