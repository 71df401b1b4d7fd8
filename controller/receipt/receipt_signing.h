// SPDX-License-Identifier: Apache-2.0
// Signing receipts and recording them in the ledger (docs/signing.md, docs/ledger.md): the run's
// key is chosen before anything runs (`--signing-key`, else STATE/keys/sealrun.key when it exists,
// else none: the receipt then says it is unsigned); once the receipt is written its exact bytes
// are signed into a DSSE envelope beside it, and one line is appended to STATE/ledger.jsonl.
#pragma once

#include <optional>
#include <string>

#include "attest/keys.h"
#include "controller/common/state_dir.h"
#include "core/result.h"

namespace sealrun::receipt {

// The envelope that belongs to a receipt file: results/<id>/receipt.json → receipt.dsse.json
// beside it; a refusal's <name>.json → <name>.dsse.json.
std::string envelope_path_for(const std::string& receipt_path);

// The key a run signs with: `explicit_path` when given (it must load), else the state directory's
// default key when one exists (it must load too), else nullopt (unsigned).
Result<std::optional<attest::SigningKey>> choose_signing_key(const std::string& explicit_path,
                                                             const run::StateDir& state);

// After the receipt is written: its envelope (when a key is given) and its ledger line. Each is
// attempted, beneath the held state directory; the error names what failed (the receipt itself
// stays as written).
Status sign_and_record(const run::StateDir& state_dir, const std::string& receipt_path,
                       const std::string& receipt_bytes, const attest::SigningKey* key,
                       const std::string& id, const std::string& state);

}  // namespace sealrun::receipt
