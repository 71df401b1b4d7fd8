// The receipt: the bounded record of one run that an auditor reads (CONTRACT.md "The receipt").
// Built as plain values by the run pipeline, rendered as canonical JSON (sorted keys, no
// insignificant whitespace) with a SHA-256 digest over everything but the digest itself, shrunk
// to fit receipt_max_bytes (tails first, then samples, then per-output details; every cut is named
// in `truncated`), and written atomically. receipt_verify() re-derives the digest and checks that
// the record is internally consistent.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "census/sample.h"
#include "core/result.h"

namespace sealrun::receipt {

inline constexpr std::string_view kSchema = "sealrun-receipt-v1";
inline constexpr size_t kTailBytes = 4096;             // per stream, before any shrinking
inline constexpr size_t kMaxSamples = 256;             // census samples kept, before any shrinking
inline constexpr size_t kMinReceiptBytes = 16 * 1024;  // a smaller cap is raised to this

struct Verification {
  std::string target, expected, observed;
  bool pass = false;
};

struct StreamRecord {
  std::string sha256;  // of the whole stream
  uint64_t size = 0;
  std::string tail;  // the last bytes, for a person (invalid UTF-8 replaced)
};

struct CommandRecord {
  std::string label;  // "job", "podman load", ...
  std::vector<std::string> argv;
  std::optional<int> exit;  // exit code, if it exited
  int signal = 0;
  bool timed_out = false;
  std::string started, finished;  // RFC 3339 UTC
  StreamRecord stdout_record, stderr_record;
};

using census::Sample;

// The grant as the receipt records it (not the grant journal's GrantRecord).
struct ContainmentRecord {
  std::string mechanism, mode;
  std::vector<std::string> enforced, degraded, unenforced_required, required;
  std::vector<std::string> tried;
};

struct MemoryLimit {
  std::string name;
  uint64_t requested = 0;
  std::optional<uint64_t> observed;
  bool applied = false;
  std::string note;
  std::optional<uint64_t> effective;  // what binds: the lower of ours and any ancestor group's
  std::string effective_set_by;       // the group that sets it
};

struct MemoryRecord {
  std::string backend;
  std::vector<MemoryLimit> limits;
  std::optional<uint64_t> peak_bytes;
  uint64_t events_high = 0, events_max = 0, events_oom = 0, events_oom_kill = 0;
  std::optional<uint64_t> swap_used_bytes;
};

struct GuardRecord {
  std::string name;  // "owned_max_bytes", "result_max_bytes", "free_min_bytes", "ceiling_bytes"
  uint64_t limit = 0, observed = 0;
  int64_t t_ms = 0;
};

struct OutputRecord {
  std::string path;  // relative to /out
  uint64_t size = 0;
  std::string sha256;
};

struct CleanupAction {
  std::string action;
  bool ok = false;
  std::string detail;
};

struct Receipt {
  std::string id;
  std::string state = "not_run";  // built | failed | not_run
  int exit = 0;
  std::string reason;
  std::string admission_sha256;
  std::string started, finished;
  std::vector<Verification> verifications;
  std::optional<ContainmentRecord> grant;
  std::vector<CommandRecord> commands;
  std::vector<Sample> samples;
  uint64_t samples_dropped = 0;
  std::optional<GuardRecord> guard;
  std::optional<MemoryRecord> memory;
  std::vector<OutputRecord> outputs;
  bool stop_confirmed = false;
  std::vector<CleanupAction> cleanup;
  std::vector<std::string> notes;  // warnings the run survived, census notes
  nlohmann::json admission;        // receipt_admission.h; null when nothing was admitted
  nlohmann::json sealrun_version;  // {version, commit, dirty}
  nlohmann::json signing;          // {key_id, envelope} when the run signs its receipt, else null
};

// Renders, bounds and digests: the bytes to write (always <= max_bytes, and valid JSON).
std::string render_receipt(const Receipt& receipt, size_t max_bytes);
// A bounded tail of a stream for the receipt: the last `max` bytes, made valid UTF-8.
std::string bounded_tail(std::string_view bytes, size_t max);

// The canonical bytes a digest covers: the document without its "digest" member, dumped compact
// with sorted keys (nlohmann's object order is sorted).
std::string digest_payload(const nlohmann::json& doc);

struct VerifyFinding {
  std::string check;
  bool pass = false;
  std::string detail;
};
// Parses (bounded) and checks a receipt: schema, digest, size, and consistency rules (built ⇒
// exit 0, every command exit 0, stop_confirmed; failed ⇒ non-zero exit and a reason; ...).
Result<std::vector<VerifyFinding>> verify_receipt_bytes(std::string_view bytes);

}  // namespace sealrun::receipt
