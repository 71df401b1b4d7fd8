// SPDX-License-Identifier: Apache-2.0
// Source identity: a git repository or bundle pinned by commit and tree (checked with git itself,
// hooks disabled, no global or system config), and a per-file manifest of the checked-out tree
// (path -> bytes, sha256) whose canonical bytes are pinned by their own SHA-256.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace sealrun {

struct GitIdentity {
  std::string commit;  // 40 hex
  std::string tree;    // 40 hex
};

// Commit and tree that `rev` (default HEAD) names in a repository directory or a bundle file.
Result<GitIdentity> read_git_identity(const std::string& repo_or_bundle,
                                      const std::string& rev = "HEAD");

// Checks out exactly `commit` from the repository or bundle into `dest` (which must not exist),
// after checking that the commit's tree is `expected_tree`. No .git directory is left in dest.
Status export_git_commit(const std::string& repo_or_bundle, const std::string& commit,
                         const std::string& expected_tree, const std::string& dest);

// The committer time of `commit` (seconds since the epoch, as git recorded it): the default
// SOURCE_DATE_EPOCH and mtime of a git or bundle source (docs/admission.md).
Result<int64_t> read_git_commit_time(const std::string& repo_or_bundle, const std::string& commit);

struct ManifestEntry {
  std::string path;  // relative, '/'-separated, no "." or ".." components, no leading '/'
  uint64_t bytes = 0;
  std::string sha256;
};
// Sorted by raw path bytes, no duplicates.
using Manifest = std::vector<ManifestEntry>;

// The manifest of every regular file under `root` (symlinks and other kinds are refused by name).
Result<Manifest> build_manifest(const std::string& root);
// Canonical bytes (one JSON object per line, docs/source-manifest.md); what the pin hashes.
std::string manifest_to_jsonl(const Manifest& manifest);
// Strict, bounded parse of manifest bytes: refuses absolute paths, "..", ".", empty or NUL
// components, duplicates, unsorted input, more than max_entries lines.
Result<Manifest> parse_manifest(std::string_view jsonl, size_t max_entries = 1000000);

struct ManifestMismatch {
  std::string path;
  std::string expected;  // "sha256:<hex> <bytes>" or "absent"
  std::string observed;  // likewise, or why it could not be read
};
// Compares the files under `root` with the manifest: every listed file must match, no unlisted
// regular file may exist, and no listed path may pass through a symlink.
Result<std::vector<ManifestMismatch>> verify_manifest(const std::string& root,
                                                      const Manifest& manifest);

}  // namespace sealrun
