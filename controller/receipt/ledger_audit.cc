// SPDX-License-Identifier: Apache-2.0
// A receipt's identity and the ledger's audit: see ledger_audit.h and docs/ledger.md.
#include "controller/receipt/ledger_audit.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <filesystem>
#include <map>
#include <optional>

#include "attest/ledger.h"
#include "attest/ledger_checkpoint.h"
#include "attest/openssl_util.h"
#include "controller/receipt/receipt_signing.h"
#include "core/bounded_file.h"
#include "core/strict_json.h"

namespace sealrun::receipt {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string id_of(const json& doc) {
  return doc.is_object() && doc.contains("id") && doc["id"].is_string()
             ? doc["id"].get<std::string>()
             : std::string();
}

bool claims_signed(const std::string& receipt_path, const json& doc) {
  struct stat st {};
  return (doc.is_object() && doc.contains("signing") && doc["signing"].is_object()) ||
         ::lstat(envelope_path_for(receipt_path).c_str(), &st) == 0;
}

// The receipt a line names: the run's own, or one of the id's refusals, whichever has the line's
// SHA-256. Its path and bytes, or nullopt.
std::optional<std::pair<std::string, std::string>> receipt_of(const std::string& state_dir,
                                                              const attest::LedgerEntry& e) {
  std::vector<std::string> candidates = {state_dir + "/results/" + e.id + "/receipt.json"};
  std::error_code ec;
  for (auto it = fs::directory_iterator(state_dir + "/refusals/" + e.id, ec);
       !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::string p = it->path().string();
    if (p.size() > 5 && p.compare(p.size() - 5, 5, ".json") == 0 &&
        p.find(".dsse.json") == std::string::npos)
      candidates.push_back(p);
  }
  for (const auto& c : candidates) {
    auto b = read_bounded_file(AT_FDCWD, c, kMiB);
    if (b && attest::sha256_hex_of(*b) == e.receipt_sha256) return std::make_pair(c, *b);
  }
  return std::nullopt;
}

struct Line {
  attest::LedgerEntry entry;
  uint64_t number = 0;
};

// The checkpoint check: the ledger as read must extend it.
Check check_checkpoint(const LedgerAuditOptions& o, uint64_t lines,
                       const std::string& sha256_at_length,
                       const std::optional<attest::PublicKey>& key) {
  const char* kName = "ledger checkpoint";
  auto read = attest::read_checkpoint(o.checkpoint_path, key ? &*key : nullptr);
  if (!read) return {kName, Verdict::kFail, read.error().message()};
  const auto& c = read->checkpoint;
  if (auto wrong = attest::ledger_extends(c, lines, sha256_at_length))
    return {kName, Verdict::kFail, *wrong};
  std::string how = read->key_id            ? "signed, key " + *read->key_id + " verified"
                    : read->signed_envelope ? "signed, signature not checked (give --key)"
                                            : "unsigned: as trustworthy as where it was kept";
  return {kName, Verdict::kPass,
          fmt::format("the ledger extends the checkpoint of {} ({} line(s), head sha256 {}); {}",
                      c.at, c.length, c.head_sha256, how)};
}

}  // namespace

Check check_receipt_place(const std::string& receipt_path, const json& doc) {
  const char* kName = "id matches its place";
  std::error_code ec;
  fs::path p = fs::absolute(receipt_path, ec).lexically_normal();
  fs::path dir = p.parent_path();
  std::string place = dir.parent_path().filename().string();
  bool in_results = place == "results" && p.filename() == "receipt.json";
  if (ec || (!in_results && place != "refusals"))
    return {kName, Verdict::kNote,
            "not checked: the receipt is not in a state directory's results/<id>/ or "
            "refusals/<id>/"};
  std::string want = dir.filename().string();
  std::string id = id_of(doc);
  if (id == want)
    return {kName, Verdict::kPass,
            fmt::format("id {} is its directory's, {}/{}/", id, place, want)};
  return {
      kName, Verdict::kFail,
      fmt::format("the receipt's id is \"{}\" but it is in {}/{}/: a receipt copied from another "
                  "run",
                  id, place, want)};
}

LedgerAudit audit_ledger(const LedgerAuditOptions& o) {
  LedgerAudit out;
  auto& checks = out.checks;
  auto dir = attest::open_state_dir(o.state_dir);
  if (!dir) {
    checks.push_back({"ledger", Verdict::kFail, dir.error().message()});
    return out;
  }
  std::optional<attest::PublicKey> key;
  if (!o.key_path.empty()) {
    auto k = attest::load_public_key(o.key_path);
    if (!k) {
      checks.push_back({"key", Verdict::kFail, k.error().message()});
      return out;
    }
    key = std::move(*k);
  }
  // The checkpoint is compared with the line at its length, so only that line's hash is kept.
  uint64_t checkpoint_length = 0;
  if (!o.checkpoint_path.empty())
    if (auto c = attest::read_checkpoint(o.checkpoint_path, nullptr); c)
      checkpoint_length = c->checkpoint.length;
  std::string sha256_at_checkpoint;
  std::vector<Line> lines;
  std::map<std::string, uint64_t> first_line_of;  // receipt SHA-256 -> the first line naming it
  std::vector<Check> duplicates;
  auto report = attest::verify_ledger(dir->get(), [&](const attest::LedgerEntry& e, uint64_t n) {
    if (n == checkpoint_length)
      sha256_at_checkpoint = attest::sha256_hex_of(attest::format_ledger_line(e));
    auto [it, first] = first_line_of.emplace(e.receipt_sha256, n);
    if (!first)
      duplicates.push_back(
          {fmt::format("ledger line {} ({} {})", n, e.id, e.state), Verdict::kFail,
           fmt::format("names the receipt of line {} again (sha256 {}): one receipt listed twice",
                       it->second, e.receipt_sha256)});
    if (e.seq >= o.from_seq) lines.push_back({e, n});
  });
  if (!report) {
    checks.push_back({"ledger", Verdict::kFail, report.error().message()});
    return out;
  }
  out.read = true;
  out.length = report->lines;
  out.head_seq = report->head_seq;
  out.head_sha256 = report->head_sha256;
  checks.push_back(
      {"ledger chain", report->ok() ? Verdict::kPass : Verdict::kFail,
       report->ok() ? fmt::format("{} line(s), head seq {} sha256 {}", report->lines,
                                  report->head_seq, report->head_sha256)
       : report->first_problem
           ? fmt::format("line {}: {}", report->first_problem->line, report->first_problem->what)
           : fmt::format("{} torn byte(s) after the last line", report->torn_bytes)});
  if (!o.checkpoint_path.empty())
    checks.push_back(check_checkpoint(o, report->lines, sha256_at_checkpoint, key));
  if (o.from_seq > 1)
    checks.push_back({"ledger --from",
                      o.from_seq <= report->lines ? Verdict::kNote : Verdict::kFail,
                      o.from_seq <= report->lines
                          ? fmt::format("the receipts of lines before seq {} were not read (the "
                                        "chain was checked whole)",
                                        o.from_seq)
                          : fmt::format("--from {} is past the ledger's last line ({})", o.from_seq,
                                        report->lines)});
  for (auto& d : duplicates) checks.push_back(std::move(d));

  uint64_t first_signed = 0;  // the first line (read) whose receipt is signed
  for (const auto& [e, n] : lines) {
    std::string what = fmt::format("ledger line {} ({} {})", n, e.id, e.state);
    auto found = receipt_of(o.state_dir, e);
    if (!found) {
      checks.push_back({what, Verdict::kFail,
                        "no receipt of this run has the recorded SHA-256 (changed or removed)"});
      continue;
    }
    const auto& [path, bytes] = *found;
    auto doc = parse_strict_json(bytes);
    if (!doc || !doc->is_object()) {
      checks.push_back({what, Verdict::kFail, path + ": not a JSON object"});
      continue;
    }
    if (id_of(*doc) != e.id) {
      checks.push_back({what, Verdict::kFail,
                        fmt::format("{}: the receipt's id is \"{}\", not the line's: a receipt "
                                    "copied from another run",
                                    path, id_of(*doc))});
      continue;
    }
    if (doc->value("state", "") != e.state) {
      checks.push_back({what, Verdict::kFail, path + ": state differs from the ledger"});
      continue;
    }
    bool is_signed = claims_signed(path, *doc);
    if (!key) {
      auto sig = check_signature(path, bytes, *doc, "");
      bool bad = !sig.empty() && sig[0].verdict == Verdict::kFail;
      checks.push_back({what, bad ? Verdict::kFail : Verdict::kPass, bad ? sig[0].detail : path});
    } else if (is_signed) {
      if (first_signed == 0) first_signed = n;
      auto sig = check_signature(path, bytes, *doc, o.key_path);
      bool bad = sig.empty() || sig[0].verdict != Verdict::kPass;
      checks.push_back({what, bad ? Verdict::kFail : Verdict::kPass,
                        bad ? (sig.empty() ? "signature not checked" : sig[0].detail)
                            : path + ", signature verified"});
    } else if (first_signed == 0) {
      checks.push_back({what, Verdict::kNote,
                        path + ": unsigned, before the first signed receipt (made before the key "
                               "existed?): authenticity not checked"});
    } else {
      checks.push_back({what, Verdict::kFail,
                        fmt::format("{}: unsigned, after line {} was signed: its signature was "
                                    "removed, or the run did not use the key",
                                    path, first_signed)});
    }
  }
  if (key && first_signed == 0 && !lines.empty())
    checks.push_back({"ledger signatures", Verdict::kFail,
                      "--key was given, but no receipt read is signed: nothing is authenticated"});
  return out;
}

std::vector<Check> check_ledger(const std::string& state_dir, const std::string& key_path) {
  return audit_ledger({state_dir, key_path, "", 1}).checks;
}

}  // namespace sealrun::receipt
