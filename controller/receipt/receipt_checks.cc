// SPDX-License-Identifier: Apache-2.0
// The checks of `sealrun receipt verify` beyond the receipt's own consistency: see
// receipt_checks.h.
#include "controller/receipt/receipt_checks.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include "attest/dsse.h"
#include "attest/openssl_util.h"
#include "controller/receipt/receipt_signing.h"

namespace sealrun::receipt {

using nlohmann::json;

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

std::vector<Check> check_strict(const json& doc) {
  std::vector<Check> out;
  const json& g = doc.contains("grant") ? doc["grant"] : json();
  if (!g.is_object()) {
    out.push_back({"strict: enforcing", Verdict::kFail, "no grant recorded (nothing ran)"});
    return out;
  }
  std::string mode = g.value("mode", "");
  out.push_back(
      {"strict: enforcing", mode == "enforcing" ? Verdict::kPass : Verdict::kFail, "mode " + mode});
  json degraded = g.value("degraded", json::array());
  out.push_back(
      {"strict: nothing degraded", degraded.empty() ? Verdict::kPass : Verdict::kFail,
       degraded.empty() ? "every requested dimension enforced" : "degraded: " + degraded.dump()});
  return out;
}

}  // namespace sealrun::receipt
