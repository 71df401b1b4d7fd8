// `sealrun receipt show|verify|diff|export`: reviewing receipts without trusting them — each is
// read bounded (≤ 1 MiB, no symlink) and parsed strictly before anything is shown.
#include <fcntl.h>
#include <fmt/format.h>

#include <map>

#include "controller/commands.h"
#include "controller/exit_codes.h"
#include "controller/output.h"
#include "controller/receipt.h"
#include "controller/receipt_review.h"
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
      fmt::print("{}", receipt::summary_text(*doc));
    *exit_code = kExitOk;
  });
}

void add_verify(CLI::App& parent, int* exit_code) {
  auto* cmd = parent.add_subcommand(
      "verify", "Recompute the receipt's digest and check its consistency (exit 0: all pass)");
  auto path = std::make_shared<std::string>();
  auto as_json = std::make_shared<bool>(false);
  cmd->add_option("RECEIPT", *path, "receipt.json")->required();
  cmd->add_flag("--json", *as_json, "one JSON object per check, in an array");
  cmd->callback([=] {
    auto bytes = load_bytes(*path);
    auto findings = bytes ? receipt::verify_receipt_bytes(*bytes)
                          : Result<std::vector<receipt::VerifyFinding>>(bytes.error());
    if (!findings) {
      print_error("receipt verify", findings.error());
      *exit_code = kExitFailure;
      return;
    }
    bool all = true;
    json items = json::array();
    for (const auto& f : *findings) {
      all = all && f.pass;
      items.push_back(
          {{"check", f.check}, {"result", f.pass ? "pass" : "fail"}, {"detail", f.detail}});
      if (!*as_json) fmt::print("{:<4}  {:<28} {}\n", f.pass ? "pass" : "FAIL", f.check, f.detail);
    }
    if (*as_json) print_json(items);
    *exit_code = all ? kExitOk : kExitFailure;
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
    auto diffs = receipt::diff_receipts(*da, *db, *timings);
    if (*as_json) {
      json items = json::array();
      for (const auto& d : diffs) items.push_back({{"path", d.path}, {"a", d.a}, {"b", d.b}});
      print_json(items);
    } else {
      for (const auto& d : diffs) fmt::print("{}\n  - {}\n  + {}\n", d.path, d.a, d.b);
    }
    *exit_code = diffs.empty() ? kExitOk : kExitFailure;
  });
}

void add_export(CLI::App& parent, int* exit_code) {
  auto* cmd = parent.add_subcommand(
      "export", "Export a verified receipt as an in-toto Statement v1 with SLSA provenance v1");
  auto path = std::make_shared<std::string>();
  cmd->add_option("RECEIPT", *path, "receipt.json")->required();
  cmd->callback([=] {
    auto bytes = load_bytes(*path);
    if (!bytes) {
      print_error("receipt export", bytes.error());
      *exit_code = kExitFailure;
      return;
    }
    auto findings = receipt::verify_receipt_bytes(*bytes);
    if (!findings) {
      print_error("receipt export", findings.error());
      *exit_code = kExitFailure;
      return;
    }
    for (const auto& f : *findings)
      if (!f.pass) {
        print_error("receipt export", fmt::format("the receipt does not verify ({}: {}); run "
                                                  "`sealrun receipt verify` for details",
                                                  f.check, f.detail));
        *exit_code = kExitFailure;
        return;
      }
    auto doc = parse_strict_json(*bytes);
    print_json(receipt::to_in_toto(*doc));
    *exit_code = kExitOk;
  });
}

}  // namespace

void register_receipt(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("receipt", "Review receipts: show, verify, diff, export");
  cmd->require_subcommand(1);
  add_show(*cmd, exit_code);
  add_verify(*cmd, exit_code);
  add_diff(*cmd, exit_code);
  add_export(*cmd, exit_code);
}

}  // namespace sealrun::cli
