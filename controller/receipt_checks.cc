// The checks of `sealrun receipt verify` beyond the receipt's own consistency: see
// receipt_checks.h.
#include "controller/receipt_checks.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <filesystem>
#include <map>
#include <set>

#include "attest/base64.h"
#include "attest/dsse.h"
#include "attest/ledger.h"
#include "attest/openssl_util.h"
#include "controller/receipt_signing.h"
#include "core/bounded_file.h"
#include "core/strict_json.h"
#include "fingerprint/file_hash.h"

namespace sealrun::receipt {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr size_t kMaxOutputEntries = 1000000;

std::string dir_of(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// An output's raw name: `path`, or the bytes of `path_b64` when the name is not UTF-8.
std::string raw_name(const json& o) {
  if (o.contains("path_b64") && o["path_b64"].is_string()) {
    auto raw = attest::base64_decode(o["path_b64"].get<std::string>(), 65536, "path_b64");
    if (raw) return *raw;
  }
  return o.value("path", "");
}

// The recorded outputs: the receipt's list, or — when it had to shorten it — the complete list
// beside it (outputs.jsonl), whose digest the receipt pins.
Result<std::vector<json>> recorded_outputs(const std::string& receipt_path, const json& doc) {
  std::vector<json> out;
  for (const auto& o : doc.value("outputs", json::array())) out.push_back(o);
  uint64_t total = doc.value("outputs_total", static_cast<uint64_t>(out.size()));
  if (total <= out.size()) return out;
  std::string list_path = dir_of(receipt_path) + "/outputs.jsonl";
  std::string bytes = SEALRUN_TRY_CTX(
      read_bounded_file(AT_FDCWD, list_path, kMaxOutputEntries * 8192),
      "the receipt lists only part of its outputs; the complete list");
  if (attest::sha256_hex_of(bytes) != doc.value("outputs_list_sha256", ""))
    return Error::make(list_path + " does not have the digest the receipt records");
  out.clear();
  size_t start = 0;
  while (start < bytes.size()) {
    size_t end = bytes.find('\n', start);
    if (end == std::string::npos) end = bytes.size();
    out.push_back(SEALRUN_TRY(parse_strict_json(bytes.substr(start, end - start), 8)));
    start = end + 1;
  }
  return out;
}

std::string shown(const std::string& name) {
  std::string s;
  for (unsigned char c : name) s += (c < 0x20 || c == 0x7f) ? fmt::format("\\x{:02x}", c) : std::string(1, static_cast<char>(c));
  return s;
}

}  // namespace

std::vector<Check> from_findings(const std::vector<VerifyFinding>& findings) {
  std::vector<Check> out;
  out.reserve(findings.size());
  for (const auto& f : findings)
    out.push_back({f.check, f.pass ? Verdict::kPass : Verdict::kFail, f.detail});
  return out;
}

std::vector<Check> check_signature(const std::string& receipt_path, const std::string& bytes,
                                   const json& doc, const std::string& key_path) {
  std::string env_path = envelope_path_for(receipt_path);
  struct stat st {};
  bool has_envelope = ::lstat(env_path.c_str(), &st) == 0;
  bool claims_signed = doc.contains("signing") && doc["signing"].is_object();
  if (key_path.empty()) {
    if (claims_signed && !has_envelope)
      return {{"signature", Verdict::kFail,
               "the receipt says it is signed, but its envelope " + env_path + " is missing"}};
    return {{"signature", Verdict::kNote,
             claims_signed || has_envelope
                 ? "not checked: give --key PUB to check the signature (authenticity)"
                 : "unsigned: authenticity not checked"}};
  }
  auto key = attest::load_public_key(key_path);
  if (!key) return {{"signature", Verdict::kFail, key.error().message()}};
  if (!has_envelope)
    return {{"signature", Verdict::kFail,
             fmt::format("no envelope {} beside the receipt: it is unsigned", env_path)}};
  auto envelope = attest::read_envelope_file(AT_FDCWD, env_path);
  if (!envelope) return {{"signature", Verdict::kFail, envelope.error().message()}};
  auto verified = attest::verify_receipt_envelope(*envelope, *key, bytes);
  if (!verified) return {{"signature", Verdict::kFail, verified.error().message()}};
  return {{"signature", Verdict::kPass,
           fmt::format("Ed25519 over the receipt's exact bytes, key {}", verified->key_id)}};
}

std::vector<Check> check_outputs_on_disk(const std::string& receipt_path, const json& doc,
                                         const std::string& dir) {
  auto listed = recorded_outputs(receipt_path, doc);
  if (!listed) return {{"outputs on disk", Verdict::kFail, listed.error().message()}};
  std::vector<std::string> problems;
  std::set<std::string> expected;
  for (const auto& o : *listed) {
    std::string name = raw_name(o);
    expected.insert(name);
    std::string path = dir + "/" + name;
    std::string kind = o.value("kind", "file");
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) {
      problems.push_back("missing: " + shown(name));
    } else if (kind == "symlink") {
      std::error_code ec;
      auto target = fs::read_symlink(path, ec);
      if (ec || !S_ISLNK(st.st_mode) || target.string() != o.value("target", ""))
        problems.push_back("changed: " + shown(name) + " (link target)");
    } else if (o.contains("sha256")) {
      auto digest = hash_file(path);
      if (!digest || digest->sha256 != o.value("sha256", "") ||
          digest->bytes != o.value("size", uint64_t{0}))
        problems.push_back("changed: " + shown(name));
    }
  }
  std::error_code ec;
  size_t seen = 0;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       !ec && it != fs::recursive_directory_iterator() && seen < kMaxOutputEntries;
       it.increment(ec), ++seen) {
    if (it->is_directory(ec) && !it->is_symlink(ec)) continue;
    std::string rel = fs::relative(it->path(), dir, ec).string();
    if (expected.count(rel) == 0) problems.push_back("extra: " + shown(rel));
  }
  if (ec) problems.push_back("cannot walk " + dir + ": " + ec.message());
  if (problems.empty())
    return {{"outputs on disk", Verdict::kPass,
             fmt::format("{} output(s) re-hashed under {}; none missing, none extra",
                         listed->size(), dir)}};
  std::string detail;
  for (size_t i = 0; i < problems.size() && i < 20; ++i)
    detail += (detail.empty() ? "" : "; ") + problems[i];
  if (problems.size() > 20) detail += fmt::format("; and {} more", problems.size() - 20);
  return {{"outputs on disk", Verdict::kFail, detail}};
}

std::vector<Check> check_strict(const json& doc) {
  std::vector<Check> out;
  const json& g = doc.contains("grant") ? doc["grant"] : json();
  if (!g.is_object()) {
    out.push_back({"strict: enforcing", Verdict::kFail, "no grant recorded (nothing ran)"});
    return out;
  }
  std::string mode = g.value("mode", "");
  out.push_back({"strict: enforcing", mode == "enforcing" ? Verdict::kPass : Verdict::kFail,
                 "mode " + mode});
  json degraded = g.value("degraded", json::array());
  out.push_back({"strict: nothing degraded", degraded.empty() ? Verdict::kPass : Verdict::kFail,
                 degraded.empty() ? "every requested dimension enforced"
                                  : "degraded: " + degraded.dump()});
  return out;
}

std::vector<Check> check_ledger(const std::string& state_dir, const std::string& key_path) {
  std::vector<Check> out;
  auto dir = attest::open_state_dir(state_dir);
  if (!dir) return {{"ledger", Verdict::kFail, dir.error().message()}};
  std::vector<std::pair<attest::LedgerEntry, uint64_t>> entries;
  auto report = attest::verify_ledger(dir->get(), [&](const attest::LedgerEntry& e, uint64_t line) {
    entries.emplace_back(e, line);
  });
  if (!report) return {{"ledger", Verdict::kFail, report.error().message()}};
  out.push_back({"ledger chain", report->ok() ? Verdict::kPass : Verdict::kFail,
                 report->ok() ? fmt::format("{} line(s), head seq {} sha256 {}", report->lines,
                                            report->head_seq, report->head_sha256)
                 : report->first_problem
                     ? fmt::format("line {}: {}", report->first_problem->line,
                                   report->first_problem->what)
                     : fmt::format("{} torn byte(s) after the last line", report->torn_bytes)});
  for (const auto& [e, line] : entries) {
    // The receipt a line names: the run's own, or one of the id's refusals.
    std::vector<std::string> candidates = {state_dir + "/results/" + e.id + "/receipt.json"};
    std::error_code ec;
    for (auto it = fs::directory_iterator(state_dir + "/refusals/" + e.id, ec);
         !ec && it != fs::directory_iterator(); it.increment(ec)) {
      std::string p = it->path().string();
      if (p.size() > 5 && p.compare(p.size() - 5, 5, ".json") == 0 &&
          p.find(".dsse.json") == std::string::npos)
        candidates.push_back(p);
    }
    std::string found, bytes;
    for (const auto& c : candidates) {
      auto b = read_bounded_file(AT_FDCWD, c, kMiB);
      if (b && attest::sha256_hex_of(*b) == e.receipt_sha256) {
        found = c;
        bytes = *b;
        break;
      }
    }
    std::string what = fmt::format("ledger line {} ({} {})", line, e.id, e.state);
    if (found.empty()) {
      out.push_back({what, Verdict::kFail,
                     "no receipt of this run has the recorded SHA-256 (changed or removed)"});
      continue;
    }
    auto doc = parse_strict_json(bytes);
    if (!doc || doc->value("state", "") != e.state) {
      out.push_back({what, Verdict::kFail, found + ": state differs from the ledger"});
      continue;
    }
    Check c{what, Verdict::kPass, found};
    if (!key_path.empty()) {
      auto sig = check_signature(found, bytes, *doc, key_path);
      if (!sig.empty() && sig[0].verdict == Verdict::kFail) c = {what, Verdict::kFail, sig[0].detail};
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace sealrun::receipt
