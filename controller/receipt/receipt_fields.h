// SPDX-License-Identifier: Apache-2.0
// The receipt's top-level fields, spelled once: the writer (receipt.cc) emits them by these names,
// the verifier (receipt_verify.cc) checks presence and types against this table. Adding a field =
// a name here + a row in kReceiptFields + the writer's line + its class for `receipt diff`
// (receipt_diff_rules.cc; a test fails until it has one) (docs/architecture.md).
#pragma once

#include <cstdint>
#include <string_view>

namespace sealrun::receipt {

namespace field {
inline constexpr std::string_view kSchema = "schema";
inline constexpr std::string_view kSealrunVersion = "sealrun_version";
inline constexpr std::string_view kId = "id";
inline constexpr std::string_view kState = "state";
inline constexpr std::string_view kExit = "exit";
inline constexpr std::string_view kReason = "reason";
inline constexpr std::string_view kAdmissionSha256 = "admission_sha256";
inline constexpr std::string_view kAdmission = "admission";
inline constexpr std::string_view kSigning = "signing";
// `sealrun rebuild`: the receipt this run rebuilt ({receipt_sha256, id, variations}), else null.
inline constexpr std::string_view kRebuildOf = "rebuild_of";
inline constexpr std::string_view kStarted = "started";
inline constexpr std::string_view kFinished = "finished";
inline constexpr std::string_view kVerifications = "verifications";
inline constexpr std::string_view kGrant = "grant";
inline constexpr std::string_view kCommands = "commands";
inline constexpr std::string_view kSamples = "samples";
inline constexpr std::string_view kSamplesDropped = "samples_dropped";
inline constexpr std::string_view kGuard = "guard";
inline constexpr std::string_view kMemory = "memory";
inline constexpr std::string_view kOwnedSpace = "owned_space";
inline constexpr std::string_view kResultSpace = "result_space";
inline constexpr std::string_view kLimitsHit = "limits_hit";
inline constexpr std::string_view kPinCache = "pin_cache";
// The job's whole view: [{job_path, kind, host_path, pin, writable[, target]}] (view_plan.h).
inline constexpr std::string_view kView = "view";
inline constexpr std::string_view kSlurm = "slurm";
inline constexpr std::string_view kOutputs = "outputs";
inline constexpr std::string_view kStopConfirmed = "stop_confirmed";
inline constexpr std::string_view kCleanup = "cleanup";
inline constexpr std::string_view kNotes = "notes";
inline constexpr std::string_view kTruncated = "truncated";
inline constexpr std::string_view kDigest = "digest";
// Every output, pinned however few the receipt lists: the count and the SHA-256 of
// results/<id>/outputs.jsonl (null when no list was recorded: then the run is not built).
inline constexpr std::string_view kOutputsTotal = "outputs_total";
inline constexpr std::string_view kOutputsListSha256 = "outputs_list_sha256";
inline constexpr std::string_view kOutputsBytes = "outputs_bytes";
// Post-run work that was interrupted (signal, outer deadline) or refused (too many outputs...).
inline constexpr std::string_view kNotFinished = "not_finished";
// Present only in a receipt that had to shed detail: what the shortened lists no longer show.
inline constexpr std::string_view kCommandsTotal = "commands_total";
inline constexpr std::string_view kCommandsFailed = "commands_failed";
inline constexpr std::string_view kVerificationsFailed = "verifications_failed";
inline constexpr std::string_view kVerificationsTotal = "verifications_total";
inline constexpr std::string_view kCleanupTotal = "cleanup_total";
inline constexpr std::string_view kCleanupFailed = "cleanup_failed";
}  // namespace field

// JSON kinds a field may take, as a bit mask.
enum JsonKind : uint8_t {
  kJsonString = 1,
  kJsonInteger = 2,
  kJsonBool = 4,
  kJsonArray = 8,
  kJsonObject = 16,
  kJsonNull = 32,
};

// Whether a field says something about the run (kRun) or differs between two runs of the same
// thing without meaning anything (kTiming: `receipt diff` counts it per-run, a unit test checks).
// What the renderer keeps whole when a receipt must shrink is decided in receipt.cc, field by
// field, not here.
enum class FieldRole : uint8_t {
  kRun,
  kTiming,
};

struct FieldSpec {
  std::string_view key;
  uint8_t kinds;
  FieldRole role;
  bool required;  // receipts of this schema always carry it
};

inline constexpr FieldSpec kReceiptFields[] = {
    {field::kSchema, kJsonString, FieldRole::kRun, true},
    {field::kSealrunVersion, kJsonObject | kJsonNull, FieldRole::kRun, false},
    {field::kId, kJsonString, FieldRole::kTiming, true},
    {field::kState, kJsonString, FieldRole::kRun, true},
    {field::kExit, kJsonInteger, FieldRole::kRun, true},
    {field::kReason, kJsonString, FieldRole::kRun, true},
    {field::kAdmissionSha256, kJsonString, FieldRole::kRun, true},
    // What was admitted (command, env, limits, containment, inputs): kept whole when shrinking.
    {field::kAdmission, kJsonObject | kJsonNull, FieldRole::kRun, false},
    // Who signs it ({key_id}), or null: an unsigned receipt says so.
    {field::kSigning, kJsonObject | kJsonNull, FieldRole::kRun, false},
    // What a rebuild rebuilt and what it varied: kept whole (it is small and says what was proven).
    {field::kRebuildOf, kJsonObject | kJsonNull, FieldRole::kRun, false},
    {field::kStarted, kJsonString, FieldRole::kTiming, true},
    {field::kFinished, kJsonString, FieldRole::kTiming, true},
    {field::kVerifications, kJsonArray, FieldRole::kRun, true},
    {field::kGrant, kJsonObject | kJsonNull, FieldRole::kRun, true},
    {field::kCommands, kJsonArray, FieldRole::kRun, true},
    {field::kSamples, kJsonArray, FieldRole::kTiming, true},
    {field::kSamplesDropped, kJsonInteger, FieldRole::kTiming, true},
    {field::kGuard, kJsonObject | kJsonNull, FieldRole::kRun, true},
    {field::kMemory, kJsonObject | kJsonNull, FieldRole::kRun, true},
    // {kind: filesystem | directory, size_bytes, inodes[, why_not]}: how growth was bounded.
    {field::kOwnedSpace, kJsonObject | kJsonNull, FieldRole::kRun, false},
    // The same for /out: whether the kernel bounded it (run_result_space.h).
    {field::kResultSpace, kJsonObject | kJsonNull, FieldRole::kRun, false},
    // ["pids", "memory", "growth", ...]: the limits the job reached (limits_hit.h).
    {field::kLimitsHit, kJsonArray, FieldRole::kRun, false},
    // How each pinned tree was verified: from the digest cache by stat, or hashed
    // (docs/digest-cache.md).
    {field::kPinCache, kJsonArray, FieldRole::kRun, false},
    // What the job could see, each entry with what pins it: kept whole (receipt verify fails a
    // read-only entry without a pin).
    {field::kView, kJsonArray, FieldRole::kRun, false},
    // The Slurm job, step and node the run belonged to (its environment's word), or null.
    {field::kSlurm, kJsonObject | kJsonNull, FieldRole::kRun, false},
    // The listing is detail (it may be shortened); outputs_total and outputs_list_sha256 pin it.
    {field::kOutputs, kJsonArray, FieldRole::kRun, true},
    {field::kStopConfirmed, kJsonBool, FieldRole::kRun, true},
    {field::kCleanup, kJsonArray, FieldRole::kRun, true},
    {field::kNotes, kJsonArray, FieldRole::kRun, false},
    {field::kTruncated, kJsonArray, FieldRole::kRun, true},
    {field::kDigest, kJsonObject, FieldRole::kTiming, true},
    {field::kOutputsTotal, kJsonInteger | kJsonNull, FieldRole::kRun, true},
    {field::kOutputsListSha256, kJsonString | kJsonNull, FieldRole::kRun, true},
    {field::kOutputsBytes, kJsonInteger, FieldRole::kRun, true},
    {field::kNotFinished, kJsonArray, FieldRole::kRun, true},
    {field::kCommandsTotal, kJsonInteger, FieldRole::kRun, false},
    {field::kCommandsFailed, kJsonInteger, FieldRole::kRun, false},
    {field::kVerificationsFailed, kJsonInteger, FieldRole::kRun, false},
    {field::kVerificationsTotal, kJsonInteger, FieldRole::kRun, false},
    {field::kCleanupTotal, kJsonInteger, FieldRole::kRun, false},
    {field::kCleanupFailed, kJsonInteger, FieldRole::kRun, false},
};

constexpr const FieldSpec* find_field(std::string_view key) {
  for (const auto& f : kReceiptFields)
    if (f.key == key) return &f;
  return nullptr;
}

}  // namespace sealrun::receipt
