// SPDX-License-Identifier: Apache-2.0
// Reading beside a receipt for a review: see receipt_review_io.h.
#include "controller/receipt/receipt_review_io.h"

#include <fcntl.h>
#include <sys/stat.h>

#include "attest/keys.h"
#include "controller/receipt/receipt.h"
#include "controller/receipt/receipt_checks.h"
#include "controller/receipt/receipt_show.h"
#include "core/bounded_file.h"

namespace sealrun::receipt {

using nlohmann::json;

namespace {

const char* result_word(Verdict v) {
  return v == Verdict::kPass ? "pass" : v == Verdict::kFail ? "FAIL" : "note";
}

std::string parent_of(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

std::string review_key_for(const std::string& receipt_path, const std::string& key_flag) {
  if (!key_flag.empty()) return key_flag;
  // STATE/results/<id>/receipt.json or STATE/refusals/<id>/<name>.json: two levels up is STATE.
  std::string run_dir = parent_of(receipt_path);
  std::string kind_dir = parent_of(run_dir);
  std::string kind = base_of(kind_dir);
  if (kind != "results" && kind != "refusals") return "";
  std::string key = parent_of(kind_dir) + "/keys/" + attest::kPublicKeyFile;
  struct stat st {};
  return ::stat(key.c_str(), &st) == 0 && S_ISREG(st.st_mode) ? key : "";
}

std::vector<report::PageCheck> review_checks(const std::string& receipt_path,
                                             const std::string& bytes, const json& doc,
                                             const std::string& key_flag) {
  std::vector<report::PageCheck> out;
  auto findings = verify_receipt_bytes(bytes);
  if (!findings)
    out.push_back({"receipt", "FAIL", findings.error().message()});
  else
    for (const auto& f : *findings) out.push_back({f.check, f.pass ? "pass" : "FAIL", f.detail});
  std::string key = review_key_for(receipt_path, key_flag);
  for (const auto& c : check_signature(receipt_path, bytes, doc, key)) {
    std::string detail = c.detail;
    if (!key.empty() && key_flag.empty() && c.verdict == Verdict::kPass)
      detail += " (the state's key " + key + ")";
    out.push_back({c.check, result_word(c.verdict), detail});
  }
  return out;
}

std::string show_receipt(const std::string& path, const json& doc, bool verbose,
                         const std::string& key_flag) {
  ShowOptions options;
  options.verbose = verbose;
  auto bytes = read_bounded_file(AT_FDCWD, path, kMiB);
  if (!bytes) {
    options.signature_result = "FAIL";
    options.signature_detail = bytes.error().message();
  } else {
    for (const auto& c : review_checks(path, *bytes, doc, key_flag))
      if (c.check == "signature") {
        options.signature_result = c.result;
        options.signature_detail = c.detail;
      }
  }
  return show_text(doc, options);
}

}  // namespace sealrun::receipt
