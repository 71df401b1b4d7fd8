// SPDX-License-Identifier: Apache-2.0
// Freezing an admission: from a command line (and/or a small draft document), compute every pin
// with the fingerprint module, validate the result with the same strict parser that `run` uses,
// and write it in canonical form. What is frozen is exactly what `admit check` will verify.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "admission/document.h"
#include "core/result.h"
#include "fingerprint/hash_progress.h"

namespace sealrun::admission {

struct FreezeRequest {
  std::string out;              // where to write the admission
  bool force = false;           // replace an existing file at `out`
  std::string draft;            // optional: a partial admission (JSON) to start from
  std::string source;           // a git repository directory, a bundle file, or a plain tree
  std::string toolchain;        // the toolchain root directory
  std::string toolchain_mount;  // where the toolchain appears in the job (default: its root)
  std::string image;            // an OCI / docker archive
  std::vector<std::string> host_tools;  // paths of host binaries to pin
  // "HOST_DIR[=JOB_PATH]": host trees to pin and mount read-only (JOB_PATH default: HOST_DIR).
  std::vector<std::string> trees;
  // Trees pinned earlier (a `sealrun runner` pins its trees once, at start): written as they are,
  // instead of `trees`; `run` verifies them like any pin.
  std::vector<TreePin> tree_pins;
  // The state directory runs will use: a tree at or around it is refused (the job would see the
  // receipts and keys), and when it exists its digest cache records each tree as frozen, so the
  // first run verifies by a stat walk and a changed file can be named.
  std::string state_dir;
  std::vector<std::string> sets;  // "dotted.key=VALUE" (VALUE: JSON, or else a string)
  // --source-mtimes: "fixed" or "preserved" (freeze_source_mtimes.h); empty: the draft's or
  // --set's source.mtimes, else "fixed".
  std::string source_mtimes;
  std::vector<std::string> env;   // "NAME=VALUE"
  std::vector<std::string> argv;  // the command
  // Called while the toolchain tree is hashed (bytes done, bytes in all).
  std::function<void(uint64_t, uint64_t)> toolchain_progress;
  // Called while each --tree is hashed, with its label ("tree /usr") and the full picture.
  std::function<void(const std::string& label, const HashProgress&)> tree_progress;
  // A toolchain pinned earlier (a long-running `sealrun runner` pins its toolchain once, at
  // start): written as it is instead of hashing `toolchain` again. `run` verifies it like any pin,
  // so a toolchain that changed since is refused, not silently re-pinned.
  std::optional<ToolchainPin> toolchain_pin;
  // The admission is the start of a learned one (`--learn`, `--closure-from`): its closure is
  // added afterwards, so it may lack a toolchain (ParseOptions::closure_follows).
  bool closure_follows = false;
};

struct FreezeResult {
  std::string path;
  std::string sha256;  // of the bytes written
  AdmissionDocument document;
};

// Computes, validates and writes. Refuses to replace an existing `out` unless `force`.
Result<FreezeResult> freeze_admission(const FreezeRequest& request);

// The pure part, for tests: the draft plus the command line as a document with every pin filled
// in, validated, in canonical bytes.
Result<std::string> freeze_to_bytes(const FreezeRequest& request);

// Applies one "--set dotted.key=VALUE" to `doc`, creating intermediate objects. VALUE is taken as
// JSON when it parses as JSON (numbers, true, arrays...), otherwise as a plain string.
Status apply_set(nlohmann::json* doc, std::string_view assignment);

}  // namespace sealrun::admission
