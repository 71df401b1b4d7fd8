// SPDX-License-Identifier: Apache-2.0
// The receipt: the bounded record of one run that an auditor reads (docs/receipt.md).
// Built as plain values by the run pipeline, rendered as canonical JSON (sorted keys, no
// insignificant whitespace) with a SHA-256 digest over everything but the digest itself, shrunk
// to fit receipt_max_bytes, and written atomically. Shrinking sheds only illustrative detail
// (tails, samples, free text, the listing of outputs) and names every cut in `truncated`;
// verdict-bearing fields (receipt_fields.h) stay whole, and the full output list stays pinned by
// `outputs_total` and `outputs_list_sha256` (the digest of results/<id>/outputs.jsonl,
// docs/receipt.md). receipt_verify() re-derives the digest and checks that the record is internally
// consistent.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "census/sample.h"
#include "containment/spec.h"
#include "core/result.h"

namespace sealrun::receipt {

inline constexpr std::string_view kSchema = "sealrun-receipt-v1";
inline constexpr size_t kTailBytes = 4096;             // per stream, before any shrinking
inline constexpr size_t kMaxSamples = 256;             // census samples kept, before any shrinking
inline constexpr size_t kMinReceiptBytes = 16 * 1024;  // a smaller cap is raised to this

struct Verification {
  std::string target, expected, observed;
  bool pass = false;
  // How this run checked it, when that differs from run to run (a cache built now or reused):
  // kept out of `target`, which names what was checked and is how `receipt diff` matches runs.
  std::string detail = {};
};

// A stream the job wrote (its stdout or stderr), read only up to a bound: a job can ftruncate(2)
// its own stdout to 100 GiB, and that must cost nothing to record.
struct StreamRecord {
  std::string sha256;  // of the bytes read: the last `read_bytes` of the stream
  uint64_t size = 0;   // apparent size (st_size) of the whole stream
  uint64_t read_bytes = 0;
  bool cut = false;  // read_bytes < size: the digest covers only the stream's end
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
// How the chosen mechanism's probe findings were come by, where it caches them (bwrap).
struct ProbeRecord {
  bool cached = false;
  std::string key;   // SHA-256 of the cache key; empty when no key could be made
  std::string note;  // "hit", or why the cache was not used and what was done instead
};

struct ContainmentRecord {
  std::string mechanism, mode;
  std::vector<std::string> enforced, degraded, unenforced_required, required;
  std::vector<std::string> tried;
  std::optional<ProbeRecord> probe;  // null: the mechanism keeps no probe cache
  // The host ids the job ran as: "own" (a uid of the run's own, run_handover.h) or "caller" (the
  // controller was not root: its own ids, shared with whatever else it runs).
  int64_t job_uid = -1, job_gid = -1;
  std::string job_identity;
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

// What kind of entry an output is. Directories are not outputs (they are implied by the paths).
enum class OutputKind : uint8_t { kFile, kSymlink, kFifo, kSocket, kCharDevice, kBlockDevice };
std::string_view output_kind_name(OutputKind kind);  // "file", "symlink", "fifo", ...

// One entry the job left in /out. Names are raw bytes (a Linux name need not be UTF-8); the
// rendering (output_json) records them losslessly.
struct OutputRecord {
  std::string path;    // raw bytes, relative to /out, '/'-separated
  uint64_t size = 0;   // files: apparent size (st_size)
  std::string sha256;  // files
  OutputKind kind = OutputKind::kFile;
  std::string hardlink_of;  // files: the first path (byte order) of the same inode, if not this
  std::string target;       // symlinks: the raw target, never followed
  std::string device;       // devices: "major:minor"
};

// An output as the receipt and results/<id>/outputs.jsonl spell it (docs/receipt.md): a name that
// is valid UTF-8 as is; otherwise `<key>_b64` (base64 of the raw bytes) beside an escaped display
// form under `<key>`. Symlinks: {path, kind, target}; files: {path, size, sha256[, hardlink_of]}.
nlohmann::json output_json(const OutputRecord& output);
// The exact bytes of outputs.jsonl for `outputs` (sorted by raw path bytes): one compact JSON
// object per line, keys sorted, each line ending in "\n". Its SHA-256 is `outputs_list_sha256`.
std::string output_list_bytes(const std::vector<OutputRecord>& outputs);

struct CleanupAction {
  std::string action;
  bool ok = false;
  std::string detail;
};

// What the owned space was (docs/growth.md): a file system of its
// own, or a directory guarded by the walking census, and why not a file system when not.
struct OwnedSpaceRecord {
  std::string kind;  // "filesystem" | "directory"
  uint64_t size_bytes = 0;
  uint64_t inodes = 0;
  std::string why_not;  // kind "directory": what the host lacked, else empty
  std::string made;     // kind "filesystem": "template <key>" or "mkfs.ext4 (...)"
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
  std::optional<OwnedSpaceRecord> owned_space;  // null when no owned space was made
  // What bounded /out (run_result_space.h), in the same shape; null when no owned space was made.
  std::optional<OwnedSpaceRecord> result_space;
  // The limits the job reached (limits_hit.h): "pids", "memory", "growth", "result_space", ...
  std::vector<std::string> limits_hit;
  // Every output, sorted by raw path bytes; empty unless outputs_recorded. The receipt may list
  // only some of them; outputs_total and outputs_list_sha256 always pin them all.
  std::vector<OutputRecord> outputs;
  bool outputs_recorded = false;  // the whole list was recorded (and written to outputs.jsonl)
  uint64_t outputs_bytes = 0;     // apparent bytes of the distinct regular files
  std::vector<std::string> not_finished;  // post-run work that was interrupted or refused
  bool stop_confirmed = false;
  std::vector<CleanupAction> cleanup;
  std::vector<std::string> notes;  // warnings the run survived, census notes
  nlohmann::json admission;        // receipt_admission.h; null when nothing was admitted
  nlohmann::json sealrun_version;  // {version, commit, dirty}
  nlohmann::json signing;          // {key_id, envelope} when the run signs its receipt, else null
  // `sealrun rebuild`: {receipt_sha256, id, variations[]} of the receipt this run rebuilt; null
  // for any other run.
  nlohmann::json rebuild_of;
  // Where in a Slurm cluster the run happened (slurm_context.h), or null outside Slurm.
  nlohmann::json slurm;
  // How each pinned tree was verified (fingerprint/cached_tree.h pin_cache_to_json), in order.
  nlohmann::json pin_cache = nlohmann::json::array();
  // The job's view (containment/view_plan.h) as view_json() writes it; empty when nothing ran.
  nlohmann::json view = nlohmann::json::array();
};

// [{job_path, kind, host_path, pin, writable[, target]}] (target: links only). host_path and pin
// are null where the entry has none (kernel-made places, writable places, links).
nlohmann::json view_json(const std::vector<ViewEntry>& view);

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
