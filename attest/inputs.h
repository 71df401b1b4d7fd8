// SPDX-License-Identifier: Apache-2.0
// What an admission pinned, as in-toto ResourceDescriptors (uri + digest + annotations): the list
// the receipt records as `admission.inputs` and the export copies into SLSA's
// `resolvedDependencies`. The controller copies its pins into the plain structs below and calls
// inputs_from_pins(); the mapping is documented, pin by pin, in docs/build-type.md.
//
// Digest keys come from the in-toto DigestSet list (sha256, gitCommit, gitTree) where one fits;
// sealrun's own digests get vendor-prefixed keys (SLSA's `<vendor>_<name>` convention), lower-case
// hex like the standard ones:
//   sealrun_semanticTreeV1   - semantic-tree-v1 digest of a directory (docs/semantic-tree-v1.md)
//   sealrun_sourceManifestV1 - SHA-256 of a source manifest's canonical bytes
//                              (docs/source-manifest.md)
//   sealrun_sourceMtimesV1   - SHA-256 of a source's canonical mtimes listing, when its host
//                              mtimes are preserved (docs/admission.md, "Source timestamps")
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace sealrun::attest {

inline constexpr char kSemanticTreeDigestKey[] = "sealrun_semanticTreeV1";
inline constexpr char kSourceManifestDigestKey[] = "sealrun_sourceManifestV1";
inline constexpr char kSourceMtimesDigestKey[] = "sealrun_sourceMtimesV1";

// admission `source`.
struct SourcePin {
  std::string kind;               // git | bundle | tree
  std::string path;               // absolute host path of the repository, bundle file or tree
  std::string commit;             // git, bundle: 40 (or 64) hex
  std::string tree;               // git, bundle: the commit's tree
  std::string manifest_sha256;    // all kinds
  std::string path_sha256;        // bundle: SHA-256 of the bundle file
  std::string job_path = "/src";  // mounts.source
  // source.mtimes: "fixed" (every entry at mtime_epoch) or "preserved" (pinned by
  // mtimes_sha256); empty: not recorded (annotations say nothing of the times).
  std::string mtimes;
  int64_t mtime_epoch = 0;
  std::string mtimes_sha256;
};

// A pinned directory: a toolchain (`toolchain.root`/`tree_sha256`/`mount_path`) or a host tree
// pinned with `--tree`.
struct TreePin {
  std::string host_path;
  std::string job_path;
  std::string tree_sha256;  // semantic-tree-v1
};

// admission `image`.
struct ImagePin {
  std::string archive;
  std::string archive_sha256;
  std::string image_id;               // "sha256:<hex>"
  std::vector<std::string> diff_ids;  // "sha256:<hex>", in order
};

// A pinned single file: a host tool, or one file of a learned closure (`host_files`).
struct FilePin {
  std::string path;
  std::string sha256;
};

struct AdmissionPins {
  std::optional<SourcePin> source;
  std::vector<TreePin> toolchains;
  std::vector<TreePin> trees;
  std::optional<ImagePin> image;
  std::vector<FilePin> host_tools;
  std::vector<FilePin> closure;
};

// One ResourceDescriptor per pin (two for a bundle source: the commit and the bundle file), in the
// order source, toolchains, trees, image, host tools, closure. Every one has `name`, `uri`,
// `digest` and `annotations.kind`. Refuses a pin whose digest or path is malformed, naming it.
Result<nlohmann::json> inputs_from_pins(const AdmissionPins& pins);

// "file://" + the absolute path, every byte other than A-Z a-z 0-9 - . _ ~ / percent-encoded
// (upper-case hex, RFC 3986), so a path with spaces, '@', '#' or non-ASCII bytes stays one
// unambiguous URI.
std::string file_uri(std::string_view absolute_path);

// Checks one descriptor as the export needs it: an object with a non-empty string `uri`, a
// non-empty `digest` of string values (lower-case hex for the algorithms in-toto names), and
// optional `name` (string) and `annotations` (object). `where` prefixes errors.
Status check_input_descriptor(const nlohmann::json& descriptor, const std::string& where);

}  // namespace sealrun::attest
