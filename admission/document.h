// SPDX-License-Identifier: Apache-2.0
// The admission document, schema "sealrun-admission-v1" (docs/admission.md,
// docs/admission.schema.json): the one statement of what may run — the exact command, every
// input pinned by hash, the mounts, the limits and the containment that is required. These are
// plain values; parsing (parse.cc) guarantees every invariant documented here, and
// canonical_admission_json() writes them back in one stable spelling.
#pragma once

#include <cstdint>
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dimension.h"
#include "core/mechanism_kind.h"
#include "core/result.h"
#include "fingerprint/source.h"
#include "fingerprint/source_mtimes.h"

namespace sealrun::admission {

inline constexpr std::string_view kSchema = "sealrun-admission-v1";
// An admission is read whole into memory; nothing legitimate comes near this.
inline constexpr size_t kMaxAdmissionBytes = 1024 * 1024;

// The latest source_date_epoch (and source.mtime_epoch) an admission takes: 9999-12-31T23:59:59Z.
inline constexpr uint64_t kMaxSourceDateEpoch = 253402300799ull;

inline constexpr uint64_t kGiB = 1024ull * 1024 * 1024;
inline constexpr uint64_t kMiBytes = 1024ull * 1024;

struct Command {
  std::vector<std::string> argv;  // argv[0] absolute, or a name looked up on the job's PATH
  std::string cwd = "/src";       // absolute, inside the job
};

enum class SourceKind { kGit, kBundle, kTree };
std::string_view source_kind_name(SourceKind kind);

// The timestamps of the job's source (docs/admission.md, "Source timestamps"): one fixed time for
// every entry (mtime_epoch, which is also SOURCE_DATE_EPOCH), or the host's own mtimes of a plain
// tree, pinned entry by entry (mtimes_list) and as a whole (mtimes_sha256).
enum class SourceMtimes { kFixed, kPreserved };
std::string_view source_mtimes_name(SourceMtimes mtimes);

struct SourcePin {
  SourceKind kind = SourceKind::kGit;
  std::string path;             // absolute: repository directory, bundle file or plain tree
  std::string path_sha256;      // bundle only: SHA-256 of the bundle file
  std::string commit;           // git and bundle: 40 hex
  std::string tree;             // git and bundle: 40 hex
  Manifest manifest;            // every regular file of the checked-out tree
  std::string manifest_sha256;  // SHA-256 of manifest_to_jsonl(manifest)
  // kFixed: every entry's mtime is AdmissionDocument::source_date_epoch (written as
  // source.mtime_epoch too: one value, so it is kept in one field).
  SourceMtimes mtimes = SourceMtimes::kFixed;
  std::vector<MtimeEntry> mtimes_list;  // kPreserved: list_mtimes() of the tree as frozen
  std::string mtimes_sha256;            // kPreserved: mtimes_digest(mtimes_list)
};

struct ToolchainPin {
  std::string root;         // absolute host directory
  std::string tree_sha256;  // semantic-tree-v1 digest of root
  std::string mount_path;   // absolute path inside the job (default: same as root)
};

struct ImagePin {
  std::string archive;  // absolute host path of the OCI / docker archive
  std::string archive_sha256;
  std::string image_id;               // "sha256:<hex>"
  std::vector<std::string> diff_ids;  // "sha256:<hex>" each
};

// A host directory pinned with `admit freeze --tree HOST_DIR[=JOB_PATH]`: its semantic-tree-v1
// digest, verified (through the digest cache) before every run, mounted read-only at job_path.
struct TreePin {
  std::string host_path;    // absolute host directory (no symlink)
  std::string job_path;     // absolute path inside the job (default: host_path)
  std::string tree_sha256;  // semantic-tree-v1 digest of host_path
};

// A learned closure (`admit freeze --learn`): single host files, each bound read-only at its own
// path after its SHA-256 is verified, and symlinks recreated in the view with their text.
struct HostFilePin {
  std::string path;  // absolute
  std::string sha256;
};
struct HostLinkPin {
  std::string path;    // absolute
  std::string target;  // the link's text, as readlink(2) gives it
};

struct HostToolPin {
  std::string path;  // absolute
  std::string sha256;
};

// Where the outputs are collected from after the run: the output mount (every file the job left
// there), or the source (files that are new or differ from source.manifest) — the latter for
// remote-execution actions, which write their outputs into their input root.
enum class OutputsFrom { kOutput, kSource };
std::string_view outputs_from_name(OutputsFrom from);

// Where things appear inside the job. The toolchain is read-only and so is the source unless
// source_writable; output and scratch are writable; tmp is a private, empty tmpfs. The source is
// pinned and verified as it is before the run, whether or not the job may change it.
struct Mounts {
  std::string source = "/src";
  std::string output = "/out";
  std::string scratch = "/scratch";
  std::string tmp = "/tmp";
  bool source_writable = false;
  OutputsFrom outputs_from = OutputsFrom::kOutput;  // kSource requires source_writable
};

// The `limits` keys of docs/contract.md, with the mission's defaults.
struct Limits {
  uint64_t memory_high_bytes = 7 * kGiB;
  uint64_t memory_max_bytes = 8 * kGiB;
  uint64_t swap_max_bytes = 0;
  uint64_t pids_max = 4096;
  uint64_t wall_clock_s = 1500;  // the job
  uint64_t outer_s = 1800;       // the whole run, verification and cleanup included
  uint64_t owned_max_bytes = 8 * kGiB;
  // Files, directories and links the owned space may hold. 0: not given, and the controller's
  // default applies (about one per 8 KiB of owned_max_bytes, docs/growth.md).
  uint64_t owned_max_inodes = 0;
  uint64_t result_max_bytes = 1 * kGiB;
  // Files, directories and links /out may hold. 0: not given (the default follows
  // result_max_bytes as owned_max_inodes' follows owned_max_bytes, docs/growth.md).
  uint64_t result_max_inodes = 0;
  uint64_t free_min_bytes = 1 * kGiB;
  uint64_t ceiling_bytes = 10 * kGiB;  // owned + result + reserve must stay under this
  uint64_t reserve_bytes = 512 * kMiBytes;
  uint64_t census_interval_ms = 5000;
  uint64_t receipt_max_bytes = 1 * kMiBytes;
};

struct Containment {
  DimensionSet required = DimensionSet::all();
  std::string network = "none";  // the only value v1 accepts
  MechanismChoice mechanism;     // nullopt: "auto"
};

struct Reference {
  std::string value;    // e.g. a review URL
  std::string pattern;  // ECMAScript regex the whole value must match
};

struct AdmissionDocument {
  Command command;
  int64_t source_date_epoch = 0;
  std::map<std::string, std::string> env;  // allowed into the job, besides SOURCE_DATE_EPOCH
  SourcePin source;
  // Absent only when something else gives the job its programs: a learned closure (host_files),
  // an image, or pinned trees (docs/admission.md). A learned admission without one says so: the
  // learned closure is its toolchain.
  std::optional<ToolchainPin> toolchain;
  std::optional<ImagePin> image;
  std::vector<HostToolPin> host_tools;
  std::vector<TreePin> trees;
  std::vector<HostFilePin> host_files;
  std::vector<HostLinkPin> host_links;
  // Directories a learning run listed: recorded for a reviewer, no mount of their own.
  std::vector<std::string> host_dirs;
  Mounts mounts;
  Limits limits;
  Containment containment;
  std::optional<std::string> expires_at;   // RFC 3339 as written
  std::optional<time_t> expires_at_epoch;  // the same instant, seconds since the epoch
  std::optional<Reference> reference;
};

struct ParseOptions {
  // The document is the start of a learned admission (`admit freeze --learn`, `--closure-from`):
  // its closure is added afterwards, so a missing toolchain is not yet a problem. Only the
  // learning run itself reads such a document; what is written is parsed without this.
  bool closure_follows = false;
};

// The rule for a missing `toolchain`: allowed when the admission pins a learned closure
// (host_files), an image or trees, which give the job its programs instead (or, with
// options.closure_follows, will).
bool toolchain_may_be_absent(const AdmissionDocument& doc, const ParseOptions& options = {});

// Validates a whole document (already read by parse_strict_json) against the schema: unknown
// keys, missing keys, wrong types, relative paths, ".." components, bad digests, inconsistent
// limits. The error lists every problem found (up to a bound), each prefixed with its JSON path.
Result<AdmissionDocument> parse_admission_json(const nlohmann::json& doc,
                                               const ParseOptions& options = {});
// parse_strict_json + parse_admission_json on exact bytes.
Result<AdmissionDocument> parse_admission_bytes(std::string_view bytes,
                                                const ParseOptions& options = {});

// The document as JSON with every field present (defaults written out).
nlohmann::json admission_to_json(const AdmissionDocument& doc);
// The canonical bytes: keys sorted, two-space indent, one trailing newline. Freezing the same
// inputs twice gives identical bytes, hence an identical SHA-256.
std::string canonical_admission_bytes(const AdmissionDocument& doc);

// "2026-11-30T01:02:03Z" / "...+02:00" / fractional seconds -> seconds since the epoch.
std::optional<time_t> parse_rfc3339(std::string_view text);

}  // namespace sealrun::admission
