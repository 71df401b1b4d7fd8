// SPDX-License-Identifier: Apache-2.0
// Synthetic nodes for the index's tests and benchmark: a state directory with N runs whose
// receipts have a real receipt's shape (docs/receipt.md: admission with pinned inputs, view,
// verifications, outputs and outputs.jsonl), each signed for real with an Ed25519 key into its
// DSSE envelope and chained into ledger.jsonl — so `index ingest` verifies them exactly as it does
// a node's. Fast: no fsync, one ledger write per call. Never used by sealrun itself.
#pragma once

#include <cstdint>
#include <string>

#include "attest/keys.h"
#include "core/result.h"

namespace sealrun::index::synthetic {

// Digests the runs pin and produce, so a test knows what to ask for:
//   toolchain_digest(k)          the toolchain shared by every run with seq % 10 == k
//   closure_digest(node, seq)    a closure file of that run alone
//   output_digest(node, seq)     its output bin/app
std::string toolchain_digest(int k);
std::string closure_digest(const std::string& node, uint64_t seq);
std::string output_digest(const std::string& node, uint64_t seq);

// Appends `count` built runs (ids run-<seq>) to the node's state directory `state_dir` (created
// when missing), continuing its ledger.
Status add_runs(const std::string& state_dir, const std::string& node,
                const attest::SigningKey& key, uint64_t count);

}  // namespace sealrun::index::synthetic
