// SPDX-License-Identifier: Apache-2.0
// `sealrun receipt report`: one receipt as one static HTML page an auditor can read and hand on —
// the verdict, the checks of the receipt itself and its signature, the verifications, how the job
// was contained and which limits it reached, a timeline of memory use and owned-space growth, the
// command, its inputs and view, its outputs — and, for a ledger, an index page of every run. A page
// is self-contained: inline CSS and inline SVG, no script, no URL of anything outside it (a
// Content-Security-Policy of default-src 'none' says so to the browser too), so it renders the
// same offline, from a mail attachment or an archive. Pure: JSON in, markup out; every string of
// the receipt is escaped (html_text.h) and every list is bounded, so a page stays within a few
// times the receipt's own bound whatever the receipt holds.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace sealrun::report {

// Rows shown per list (verifications, inputs, view entries, outputs, environment); the rest are
// counted ("… 812 more in the receipt").
inline constexpr size_t kMaxRows = 2000;
// Bytes of one string shown (a longer one is cut with "…").
inline constexpr size_t kMaxTextBytes = 4096;

// One check of the receipt as `receipt verify` makes it: "pass", "FAIL" or "note".
struct PageCheck {
  std::string check;
  std::string result;
  std::string detail;
};

struct ReceiptPage {
  std::string source;             // where the receipt was read from, as given
  std::vector<PageCheck> checks;  // digest, consistency, signature
  std::string index_href;         // "index.html" on a ledger report's pages, else ""
  std::string generated_by;       // "sealrun 0.2.0"
};

std::string receipt_page_html(const nlohmann::json& receipt, const ReceiptPage& page);

struct IndexRow {
  uint64_t seq = 0;
  std::string at, id, state;  // from the ledger line
  std::string command;        // the job's argv, joined (from the receipt)
  std::string signer;         // the key id, "unsigned", or why the receipt could not be read
  std::string signature;      // "pass", "FAIL", "note"
  std::string href;           // the run's page, relative ("3-run-1.html"); "" when none
};

struct LedgerIndex {
  std::string state_dir;
  bool chain_ok = false;
  std::string chain;  // the chain's verdict in words
  std::vector<IndexRow> rows;
  std::string generated_by;
};

std::string ledger_index_html(const LedgerIndex& index);

}  // namespace sealrun::report
