// SPDX-License-Identifier: Apache-2.0
// `sealrun index report --html DIR [--db URL] [--json]`: the index as static pages an auditor can
// hand on — DIR/index.html (every node: its registered key, the ledger head the index verified,
// its runs, what ingest refused; then the newest runs) and a page per run. A run's page is the
// receipt report's own (receipt_report_html.h) when the receipt is still where it was ingested from
// and has the SHA-256 the index recorded; else a page of what the index holds (its inputs and
// outputs), saying the receipt itself was not at hand. Pages follow the receipt report's rules: no
// script, nothing loaded, every string from a receipt escaped.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <memory>

#include "attest/openssl_util.h"
#include "controller/cli/cmd_index_common.h"
#include "controller/cli/commands.h"
#include "controller/cli/printing.h"
#include "controller/receipt/html_text.h"
#include "controller/receipt/receipt_report_html.h"
#include "controller/receipt/receipt_report_parts.h"
#include "core/atomic_write.h"
#include "core/bounded_file.h"
#include "core/exit_codes.h"
#include "core/strict_json.h"
#include "core/syscall.h"
#include "core/version.h"
#include "index/query.h"

namespace sealrun::cli {

using nlohmann::json;

namespace {

// The newest runs get a line and a page; the rest are counted (the index answers the questions,
// the pages are for reading).
constexpr size_t kMaxRunsInReport = 2000;

struct ReportArgs {
  std::string html, db;
  bool json = false;
};

std::string index_generated_by() { return "sealrun " + version_text(sealrun_version()); }

std::string short_hex(const std::string& hex) {
  return hex.empty() ? "-"
                     : "<code title=\"" + html::text(hex) + "\">" + html::text(hex.substr(0, 12)) +
                           "</code>";
}

std::string command_words(const std::string& argv_json) {
  json argv = json::parse(argv_json, nullptr, false);
  if (!argv.is_array()) return argv_json;
  std::string out;
  for (const auto& a : argv)
    out += (out.empty() ? "" : " ") + (a.is_string() ? a.get<std::string>() : a.dump());
  return out;
}

// A run's page from the index alone.
std::string index_only_page(const index::IndexedRun& r, const std::string& why) {
  std::string inputs;
  for (const auto& i : r.inputs)
    inputs += fmt::format(
        "<tr><td>{}</td><td><code>{}</code></td><td>{}</td><td><code>{}</code>"
        "</td></tr>\n",
        html::text(i.kind), html::text_cut(i.name, 512), html::text(i.algorithm),
        html::text(i.digest));
  std::string body = fmt::format(
      "<section id=\"run\"><h1>Run <code>{}</code> of node <code>{}</code> (ledger line {})</h1>\n"
      "<p>{} exit {} — {}</p>\n<p>Started {}, finished {}; signed by {}; admission {}.</p>\n"
      "<p class=\"muted\">{}</p>\n<p><a href=\"index.html\">all runs</a></p></section>\n"
      "<section id=\"inputs\"><h2>Pinned inputs</h2><table><tr><th>kind</th><th>name</th>"
      "<th>algorithm</th><th>digest</th></tr>\n{}</table></section>\n",
      html::text(r.id), html::text(r.node), r.seq, report::parts::badge(r.state),
      r.exit_code ? std::to_string(*r.exit_code) : "-", html::text_cut(r.reason, 1024),
      html::text(r.started), html::text(r.finished),
      r.signer ? "key " + html::text(*r.signer) : "nobody (unsigned)",
      short_hex(r.admission_sha256), html::text(why), inputs);
  return report::parts::document(html::text("sealrun run " + r.id + " of " + r.node), body);
}

// The receipt report's page when the receipt is at hand and is the one indexed.
std::string run_page(const index::IndexedRun& r) {
  auto bytes = read_bounded_file(AT_FDCWD, r.receipt_path, 1024 * 1024);
  if (!bytes) return index_only_page(r, "The receipt is not at hand: " + bytes.error().message());
  if (attest::sha256_hex_of(*bytes) != r.receipt_sha256)
    return index_only_page(r, r.receipt_path +
                                  " is no longer the receipt that was indexed (its "
                                  "SHA-256 differs): shown from the index");
  auto doc = parse_strict_json(*bytes);
  if (!doc || !doc->is_object()) return index_only_page(r, r.receipt_path + ": not a receipt");
  report::ReceiptPage page;
  page.source = r.receipt_path;
  page.index_href = "index.html";
  page.generated_by = index_generated_by();
  page.checks.push_back(
      {"index", "pass",
       fmt::format("verified when indexed: ledger line {} of node {}, {}", r.seq, r.node,
                   r.signer ? "signature by key " + *r.signer : "unsigned")});
  return report::receipt_page_html(*doc, page);
}

std::string index_page(const std::vector<index::NodeSummary>& nodes,
                       const std::vector<index::IndexedRun>& runs,
                       const std::vector<std::string>& hrefs, uint64_t total) {
  std::string node_rows;
  for (const auto& n : nodes) {
    std::string problems;
    for (const auto& p : n.problems) problems += "<li>" + html::text_cut(p, 2048) + "</li>";
    node_rows += fmt::format(
        "<tr><td><code>{}</code></td><td>{}</td><td>{} {}</td><td>{}</td><td>{}</td><td>{}</td>"
        "</tr>\n",
        html::text(n.node), short_hex(n.key_id), n.ledger_length, short_hex(n.head_sha256), n.runs,
        html::text(n.ingested_at),
        problems.empty() ? report::parts::badge("pass")
                         : report::parts::badge("FAIL") + "<ul>" + problems + "</ul>");
  }
  std::string run_rows;
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto& r = runs[i];
    run_rows += fmt::format(
        "<tr><td>{}</td><td><code>{}</code></td><td>{}</td><td><a href=\"{}\"><code>{}</code></a>"
        "</td><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td></tr>\n",
        html::text(r.finished), html::text(r.node), r.seq, html::entities(hrefs[i]),
        html::text(r.id), report::parts::badge(r.state),
        r.signer ? short_hex(*r.signer) : "unsigned", short_hex(r.admission_sha256),
        html::text_cut(command_words(r.command), 512));
  }
  std::string body = fmt::format(
      "<section id=\"nodes\"><h1>The fleet index</h1>\n<table><tr><th>node</th><th>key</th>"
      "<th>ledger verified (lines, head)</th><th>runs</th><th>last ingest</th><th>refused</th>"
      "</tr>\n{}</table></section>\n"
      "<section id=\"runs\"><h2>Runs ({} shown of {}, newest first)</h2>\n<table><tr>"
      "<th>finished</th><th>node</th><th>seq</th><th>run</th><th>state</th><th>signer</th>"
      "<th>admission</th><th>command</th></tr>\n{}</table>\n<p class=\"muted\">Ask the index "
      "for the rest: <code>sealrun index query</code>.</p></section>\n"
      "<footer>Written by {}. A static page: no script, nothing loaded from anywhere.</footer>\n",
      node_rows, runs.size(), total, run_rows, html::entities(index_generated_by()));
  return report::parts::document(html::text("sealrun fleet index"), body);
}

Result<json> write_report(const ReportArgs& a) {
  std::string url = a.db.empty() ? kDefaultIndexUrl : a.db;
  auto db = SEALRUN_TRY(open_index(url, /*create=*/false));
  auto nodes = SEALRUN_TRY(index::list_nodes(*db));
  index::QueryFilter f;
  f.limit = kMaxRunsInReport;
  f.newest_first = true;
  auto runs = SEALRUN_TRY(index::query_runs(*db, f));
  uint64_t total = 0;
  for (const auto& n : nodes) total += n.runs;
  if (::mkdir(a.html.c_str(), 0755) != 0 && errno != EEXIST)
    return Error::from_errno("make the report directory " + a.html);
  auto out_fd = SEALRUN_TRY(
      open_at(AT_FDCWD, a.html, O_RDONLY | O_DIRECTORY).context("the report directory " + a.html));
  std::vector<std::string> hrefs;
  for (size_t i = 0; i < runs.size(); ++i) {
    hrefs.push_back(fmt::format("run-{}.html", i + 1));
    SEALRUN_TRY(write_file_atomic_in(out_fd.get(), hrefs.back(), run_page(runs[i]), 0644,
                                     a.html + "/" + hrefs.back(), DirSync::kLater));
  }
  SEALRUN_TRY(write_file_atomic_in(out_fd.get(), "index.html",
                                   index_page(nodes, runs, hrefs, total), 0644,
                                   a.html + "/index.html"));
  return json{{"db", index::redact_url(url)},
              {"html", a.html + "/index.html"},
              {"nodes", nodes.size()},
              {"runs", total},
              {"pages", runs.size() + 1}};
}

}  // namespace

void add_index_report(CLI::App& parent, int* exit_code) {
  auto* cmd = parent.add_subcommand(
      "report",
      "Write the index as HTML pages: DIR/index.html (nodes, refusals, runs) and a page "
      "per run");
  auto a = std::make_shared<ReportArgs>();
  cmd->add_option("--html", a->html, "the directory to write the pages into")
      ->type_name("DIR")
      ->required();
  cmd->add_option("--db", a->db,
                  std::string("the index: sqlite:PATH or postgresql://... (default: ") +
                      kDefaultIndexUrl + ")")
      ->type_name("URL");
  cmd->add_flag("--json", a->json, "one JSON document: {db, html, nodes, runs, pages}");
  cmd->callback([a, exit_code] {
    auto done = write_report(*a);
    if (!done) {
      print_error("index report", done.error());
      *exit_code = kExitFailure;
      return;
    }
    if (a->json)
      print_json(*done);
    else
      fmt::print("{}: {} node(s), {} run(s) indexed, {} page(s)\n",
                 (*done)["html"].get<std::string>(), (*done)["nodes"].get<size_t>(),
                 (*done)["runs"].get<uint64_t>(), (*done)["pages"].get<size_t>());
    *exit_code = kExitOk;
  });
}

}  // namespace sealrun::cli
