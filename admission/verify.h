// SPDX-License-Identifier: Apache-2.0
// Pin verification: recomputes every digest an admission names (source commit, tree, manifest and
// bundle; toolchain tree; image archive, id and diff ids; host tools) and compares each with the
// document, plus its expiry. Every check is reported, even after the first failure, so one run of
// `sealrun admit check` shows everything that drifted; the same list goes into the receipt's
// `verifications[]`.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <ctime>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "admission/document.h"
#include "fingerprint/cached_tree.h"

namespace sealrun::admission {

enum class CheckStatus {
  kPass,
  kFail,
  kSkipped,  // not attempted: an earlier gate (the admission's own digest) failed
  // Not a mismatch: the invoking user may not read a path the pin covers (EACCES or EPERM), so
  // nothing is known about its bytes; `observed` says which path as whom (unreadable.h).
  kUnreadable,
};
// "pass" / "fail" / "skipped" / "unreadable"
std::string_view check_status_name(CheckStatus s);

struct PinCheck {
  std::string
      target;  // "admission", "source.commit", "image.image_id", "host_tools:/usr/bin/bwrap"
  std::string expected;  // what the admission says
  std::string observed;  // what is there now (or why it could not be read)
  CheckStatus status = CheckStatus::kFail;
  bool passed() const { return status == CheckStatus::kPass; }
};
nlohmann::json pin_check_to_json(const PinCheck& check);  // {target, expected, observed, result}

// Which file a path named when it was read: what the view must bind.
struct FileIdentity {
  dev_t dev = 0;
  ino_t ino = 0;
  bool operator==(const FileIdentity&) const = default;
};

struct VerifyOptions {
  // Current time for the expiry check; nullopt: the real clock.
  std::optional<time_t> now;
  // Called while the toolchain tree is hashed (bytes done, bytes in all).
  std::function<void(uint64_t, uint64_t)> toolchain_progress;
  // Called while each pinned tree is verified or hashed, with its label ("toolchain", "tree
  // /usr") and the full picture (files and bytes found and done, by stat or hashed); for a
  // terminal progress line per tree.
  std::function<void(const std::string& label, const HashProgress&)> tree_progress;
  // Git and bundle sources are verified on an export of the admitted commit. When this is set, the
  // export is made here (it must not exist yet) and kept, so a run uses exactly the bytes that were
  // verified; otherwise it goes to a temporary directory that is removed afterwards. A tree source
  // is then copied here too (a snapshot) and verified there, for the same reason.
  std::string source_export_dir;
  // When non-empty, nothing is recomputed: every pin is listed as skipped, with this reason.
  std::string skip_reason;
  // The state directory whose digest cache (docs/digest-cache.md) re-verifies an unchanged
  // toolchain tree by a stat walk; empty: no cache, every byte is hashed. `rehash` bypasses the
  // cache's contents (it is still refreshed). Each use is reported to `on_pin_cache`.
  std::string digest_cache_state_dir;
  bool rehash = false;
  std::function<void(const PinCacheRecord&)> on_pin_cache;
  // Called for each closure file (host_files) whose bytes were hashed, with the identity of the
  // file that was read: a run binds that very file into the view and checks that it did
  // (docs/view.md, "Verification").
  std::function<void(const std::string& path, const FileIdentity& identity)> on_host_file;
};

// One PinCheck per pin of `doc`, in document order.
std::vector<PinCheck> verify_pins(const AdmissionDocument& doc, const VerifyOptions& options = {});

// What gives the job its programs, for a person: "toolchain.root DIR"; without a toolchain "the
// learned closure (N host files)", "the image's file system" or "the pinned trees (N)". Without a
// toolchain, verify_pins() records it as the check "toolchain" (always passing: what it names is
// verified by its own checks).
std::string toolchain_stand_in(const AdmissionDocument& doc);

// The pins of what the job's view binds from the host, and only those: the toolchain tree, each
// --tree (a changed one named entry by entry from the digest cache, as verify_pins() does), and
// the closure files. The same checks and targets as verify_pins() makes of them; a run makes
// them again after its job (controller/run/run_stage_post.cc).
std::vector<PinCheck> verify_view_pins(const AdmissionDocument& doc,
                                       const VerifyOptions& options = {});

// SHA-256 of manifest_to_jsonl(manifest): what source.manifest_sha256 pins.
std::string manifest_digest(const Manifest& manifest);

}  // namespace sealrun::admission
