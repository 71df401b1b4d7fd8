// SPDX-License-Identifier: Apache-2.0
// Receipt signing and the ledger: see receipt_signing.h.
#include "controller/receipt/receipt_signing.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include "attest/dsse.h"
#include "attest/ledger.h"
#include "attest/openssl_util.h"

namespace sealrun::receipt {

std::string envelope_path_for(const std::string& receipt_path) {
  constexpr std::string_view kJson = ".json";
  if (receipt_path.size() > kJson.size() &&
      receipt_path.compare(receipt_path.size() - kJson.size(), kJson.size(), kJson) == 0)
    return receipt_path.substr(0, receipt_path.size() - kJson.size()) + ".dsse.json";
  return receipt_path + ".dsse.json";
}

Result<std::optional<attest::SigningKey>> choose_signing_key(const std::string& explicit_path,
                                                             const run::StateDir& state) {
  if (!explicit_path.empty())
    return std::optional<attest::SigningKey>(
        SEALRUN_TRY_CTX(attest::load_signing_key(explicit_path), "--signing-key"));
  if (!state.exists(attest::kDefaultKeyInState)) return std::optional<attest::SigningKey>();
  return std::optional<attest::SigningKey>(SEALRUN_TRY(attest::load_signing_key_at(
      state.fd(), attest::kDefaultKeyInState, "STATE/" + std::string(attest::kDefaultKeyInState))));
}

Status sign_and_record(const run::StateDir& state_dir, const std::string& receipt_path,
                       const std::string& receipt_bytes, const attest::SigningKey* key,
                       const std::string& id, const std::string& state) {
  std::string problems;
  if (key != nullptr) {
    auto envelope = attest::sign_receipt(*key, receipt_bytes);
    Status written = envelope ? state_dir.write_atomic(envelope_path_for(receipt_path), *envelope)
                              : Status(envelope.error());
    if (!written) problems += "signing: " + written.error().message();
  }
  auto line = attest::append_to_ledger(
      state_dir.fd(), {id, state, attest::sha256_hex_of(receipt_bytes), "", 10000});
  if (!line) problems += (problems.empty() ? "" : "; ") + ("ledger: " + line.error().message());
  if (!problems.empty()) return Error::make(problems);
  return ok_status();
}

}  // namespace sealrun::receipt
