// SPDX-License-Identifier: Apache-2.0
// `sealrun receipt report RECEIPT --html FILE` and `sealrun receipt report --ledger STATE --html
// DIR`: the receipt page (receipt_report_html.h) of one receipt, or of every receipt a state's
// ledger records, with DIR/index.html listing them (seq, time, run, state, command, signer) and
// linking to each page, DIR/<seq>-<id>.html. Every page is written atomically; what could not be
// read (a receipt missing or changed since its ledger line, a broken chain) is said on the index
// and on stderr, and makes the exit 1 once everything readable is written.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include "attest/ledger.h"
#include "attest/openssl_util.h"
#include "controller/cli/commands.h"
#include "controller/cli/printing.h"
#include "controller/receipt/receipt_facts.h"
#include "controller/receipt/receipt_report_html.h"
#include "controller/receipt/receipt_review_io.h"
#include "core/atomic_write.h"
#include "core/bounded_file.h"
#include "core/exit_codes.h"
#include "core/strict_json.h"
#include "core/syscall.h"
#include "core/version.h"

namespace sealrun::cli {

using nlohmann::json;

namespace {

struct ReportOptions {
  std::string receipt;
  std::string ledger;
  std::string html;
  std::string key;
  bool json = false;
};

std::string generated_by() { return "sealrun " + version_text(sealrun_version()); }

report::ReceiptPage page_for(const std::string& path, const std::string& bytes, const json& doc,
                             const std::string& key, const std::string& index_href) {
  report::ReceiptPage page;
  page.source = path;
  page.checks = receipt::review_checks(path, bytes, doc, key);
  page.index_href = index_href;
  page.generated_by = generated_by();
  return page;
}

Result<json> one_receipt(const ReportOptions& o) {
  std::string bytes =
      SEALRUN_TRY(read_bounded_file(AT_FDCWD, o.receipt, kMiB).context("read receipt"));
  json doc =
      SEALRUN_TRY(parse_strict_json(bytes).context(o.receipt + " is not a readable receipt"));
  if (!doc.is_object()) return Error::make(o.receipt + " is not a receipt (not a JSON object)");
  std::string page = report::receipt_page_html(doc, page_for(o.receipt, bytes, doc, o.key, ""));
  SEALRUN_TRY(write_file_atomic(o.html, page, 0644).context("write " + o.html));
  return json{{"html", o.html}, {"pages", 1}, {"bytes", page.size()}};
}

// The receipt a ledger line names, found under the state directory by its SHA-256: the run's own
// (results/<id>/receipt.json) or one of the id's refusals. Its path and bytes, or why not.
Result<std::pair<std::string, std::string>> find_receipt(int state_fd, const std::string& state,
                                                         const attest::LedgerEntry& e) {
  std::vector<std::string> candidates = {"results/" + e.id + "/receipt.json"};
  if (auto refusals = open_at(state_fd, "refusals/" + e.id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW))
    for (const auto& name : list_dir_names(refusals->get(), 4096))
      if (name.size() > 5 && name.ends_with(".json") && !name.ends_with(".dsse.json"))
        candidates.push_back("refusals/" + e.id + "/" + name);
  for (const auto& c : candidates) {
    auto bytes = read_bounded_file(state_fd, c, kMiB);
    if (bytes && attest::sha256_hex_of(*bytes) == e.receipt_sha256)
      return std::make_pair(state + "/" + c, std::move(*bytes));
  }
  return Error::make(
      "no receipt of this run has the SHA-256 its ledger line records (changed "
      "or removed)");
}

std::string command_of(const json& doc) {
  const json& a = doc.contains("admission") ? doc["admission"] : json();
  const json& c = a.is_object() && a.contains("command") ? a["command"] : json();
  std::string out;
  for (const auto& arg : receipt::member_list(c, "argv"))
    out += (out.empty() ? "" : " ") +
           (arg.is_string() ? arg.get<std::string>() : receipt::json_text(arg));
  return out;
}

// Writes DIR/<seq>-<id>.html for every readable receipt and DIR/index.html; `problems` counts what
// could not be read.
Result<json> ledger_report(const ReportOptions& o) {
  auto state_fd = SEALRUN_TRY(attest::open_state_dir(o.ledger).context("--ledger"));
  auto listing = SEALRUN_TRY(attest::list_ledger(state_fd.get(), {}).context("read the ledger"));
  if (::mkdir(o.html.c_str(), 0755) != 0 && errno != EEXIST)
    return Error::from_errno("make the report directory " + o.html);
  auto out_fd = SEALRUN_TRY(
      open_at(AT_FDCWD, o.html, O_RDONLY | O_DIRECTORY).context("the report directory " + o.html));
  report::LedgerIndex index;
  index.state_dir = o.ledger;
  index.generated_by = generated_by();
  const auto& rep = listing.report;
  index.chain_ok = rep.ok();
  index.chain =
      rep.ok() ? fmt::format("{} line(s), head seq {} sha256 {}", rep.lines, rep.head_seq,
                             rep.head_sha256)
      : rep.first_problem
          ? fmt::format("BROKEN at line {}: {}", rep.first_problem->line, rep.first_problem->what)
          : fmt::format("{} torn byte(s) after the last line", rep.torn_bytes);
  uint64_t problems = rep.ok() ? 0 : 1;
  if (!rep.ok()) print_error("receipt report", "the ledger's chain: " + index.chain);
  for (const auto& e : listing.entries) {
    report::IndexRow row{e.seq, e.at, e.id, e.state, "", "", "", ""};
    auto found = find_receipt(state_fd.get(), o.ledger, e);
    auto doc = found ? parse_strict_json(found->second) : Result<json>(found.error());
    if (!doc || !doc->is_object()) {
      row.signer = doc ? "not a receipt" : doc.error().message();
      row.signature = "FAIL";
      print_error("receipt report",
                  fmt::format("ledger line {} ({}): {}", e.seq, e.id, row.signer));
      ++problems;
      index.rows.push_back(std::move(row));
      continue;
    }
    auto page = page_for(found->first, found->second, *doc, o.key, "index.html");
    row.command = command_of(*doc);
    const json& s = doc->contains("signing") ? (*doc)["signing"] : json();
    row.signer = s.is_object() ? "key " + receipt::member_text(s, "key_id") : "unsigned";
    for (const auto& c : page.checks)
      if (c.check == "signature") row.signature = c.result;
    row.href = fmt::format("{}-{}.html", e.seq, e.id);
    SEALRUN_TRY(write_file_atomic_in(out_fd.get(), row.href, report::receipt_page_html(*doc, page),
                                     0644, o.html + "/" + row.href, DirSync::kLater));
    index.rows.push_back(std::move(row));
  }
  SEALRUN_TRY(write_file_atomic_in(out_fd.get(), "index.html", report::ledger_index_html(index),
                                   0644, o.html + "/index.html"));
  return json{
      {"html", o.html + "/index.html"}, {"pages", listing.entries.size()}, {"problems", problems}};
}

}  // namespace

void add_receipt_report(CLI::App& parent, int* exit_code) {
  auto* cmd = parent.add_subcommand(
      "report",
      "Write a receipt as one self-contained HTML page (--html FILE), or every run of a state's "
      "ledger (--ledger STATE --html DIR: DIR/index.html and a page per run)");
  auto o = std::make_shared<ReportOptions>();
  cmd->add_option("RECEIPT", o->receipt, "receipt.json");
  cmd->add_option("--ledger", o->ledger, "state directory: a page for every run its ledger lists");
  cmd->add_option("--html", o->html, "the page to write (RECEIPT), or the directory (--ledger)")
      ->required();
  cmd->add_option("--key", o->key,
                  "public key the signatures are checked with (default: STATE/keys/sealrun.pub "
                  "when the receipt is in a state directory that has one)");
  cmd->add_flag("--json", o->json, "one JSON document: {html, pages, ...} or {error, exit}");
  cmd->callback([o, exit_code] {
    auto fail = [&](const std::string& message, int code) {
      if (o->json) print_json({{"error", message}, {"exit", code}});
      print_error("receipt report", message);
      *exit_code = code;
    };
    if (o->receipt.empty() == o->ledger.empty())
      return fail("give a RECEIPT or --ledger STATE_DIR (one of them)", kExitUsage);
    auto done = o->receipt.empty() ? ledger_report(*o) : one_receipt(*o);
    if (!done) return fail(done.error().message(), kExitFailure);
    int code = done->value("problems", 0) == 0 ? kExitOk : kExitFailure;
    if (o->json) {
      (*done)["exit"] = code;
      print_json(*done);
    } else {
      fmt::print("wrote {}\n", done->value("html", ""));
    }
    *exit_code = code;
  });
}

}  // namespace sealrun::cli
