// SPDX-License-Identifier: Apache-2.0
// `sealrun key generate --out-dir DIR [--json]`: makes the Ed25519 key pair that signs receipts
// (docs/signing.md). Never overwrites a key: an existing sealrun.key or sealrun.pub in DIR is an
// error.
#include <fmt/format.h>

#include "attest/keys.h"
#include "controller/cli/commands.h"
#include "controller/cli/printing.h"
#include "core/exit_codes.h"

namespace sealrun::cli {

void register_key(CLI::App& app, int* exit_code) {
  auto* key = app.add_subcommand("key", "Manage the Ed25519 key that signs receipts");
  key->require_subcommand(1);
  auto* gen = key->add_subcommand(
      "generate",
      "Write a new Ed25519 key pair: DIR/sealrun.key (PKCS#8 PEM, mode 0600) and DIR/sealrun.pub "
      "(SubjectPublicKeyInfo PEM); print the key id (SHA-256 of the public key's DER). DIR is "
      "created (mode 0700) if missing; existing key files are never overwritten. The default key "
      "of `sealrun run` is STATE/keys/sealrun.key");
  auto out_dir = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  gen->add_option("--out-dir", *out_dir, "directory for sealrun.key and sealrun.pub")->required();
  gen->add_flag("--json", *json, "print {key_path, pub_path, key_id} as JSON");
  gen->callback([=] {
    auto pair = attest::generate_key_pair(*out_dir);
    if (!pair) {
      print_error("key generate", pair.error());
      *exit_code = kExitFailure;
      return;
    }
    if (*json) {
      print_json(
          {{"key_path", pair->key_path}, {"pub_path", pair->pub_path}, {"key_id", pair->key_id}});
    } else {
      fmt::print(
          "{}  (private: keep it; mode 0600)\n{}  (public: give it to verifiers)\nkey id {}\n",
          pair->key_path, pair->pub_path, pair->key_id);
    }
    *exit_code = kExitOk;
  });
}

}  // namespace sealrun::cli
