// SPDX-License-Identifier: Apache-2.0
// What the index keeps of one receipt, and how it is read from the receipt's JSON (pure; the
// receipt has been verified before this is called). Inputs are every pinned digest the receipt
// names (docs/receipt.md): the admission's own SHA-256; each of `admission.inputs` — source,
// toolchain, trees, image, host tools, closure files — once per digest algorithm (an image also
// by its image id and each layer's diff id); and each `view` entry pinned by a SHA-256 that the
// list above does not already hold (the generated /etc files, podman's init). Outputs are the
// regular files of the run's outputs list, with size and SHA-256. Digests are kept as lower-case
// hex without a "sha256:" prefix, so one --input-sha256 finds a file whether it was pinned as a
// closure file, a host tool or a view entry.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace sealrun::index {

struct InputRecord {
  std::string kind;       // admission | source | toolchain | tree | image | host_tool | closure |
                          // a view kind (generated, init, ...)
  std::string name;       // "toolchain:/opt/tc", "closure:/usr/lib/libc.so.6", "admission"
  std::string uri;        // "file:///..." or "" (the admission, a view entry without a host path)
  std::string algorithm;  // sha256 | sealrun_semanticTreeV1 | gitCommit | image_id | diff_id ...
  std::string digest;     // lower-case hex
};

struct OutputRecord {
  std::string path;
  uint64_t size = 0;
  std::string sha256;
};

struct RunRecord {
  std::string node;
  uint64_t seq = 0;
  std::string id, state;
  std::optional<int64_t> exit_code;
  std::string reason, started, finished, ledger_at;
  std::optional<std::string> signer;  // the verifying key's id; nullopt: unsigned
  std::string admission_sha256;
  std::string command;  // the job's argv as a JSON array ("" when none was admitted)
  std::string receipt_sha256, receipt_path;
  std::vector<InputRecord> inputs;
  std::vector<OutputRecord> outputs;
};

// Fills id, state, exit, reason, times, admission digest, command, inputs and the outputs the
// receipt lists (regular files only) from a receipt document. Fields a receipt may lack are left
// empty; a field of the wrong type is an error naming it.
Status read_receipt_fields(const nlohmann::json& receipt, RunRecord* out);

// The outputs of outputs.jsonl's bytes (regular files only), replacing `out->outputs`. Each line
// must be a JSON object; the error names the line.
Status read_outputs_jsonl(std::string_view bytes, RunRecord* out);

// "sha256:ABC..." / "ABC..." -> "abc...": the form digests are kept and looked up in.
std::string normalize_digest(std::string_view text);
// (Whether it is then a SHA-256: core/hex.h's is_sha256_hex.)

}  // namespace sealrun::index
