// SPDX-License-Identifier: Apache-2.0
// Identity of a container image archive: an OCI image layout tar (`podman save --format
// oci-archive`) or a docker-archive tar (`podman save` default). Every referenced blob's digest and
// size are checked against the bytes in the archive, so the identity cannot name what is not there.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"

namespace sealrun {

// Where one layer's bytes lie in the archive (for unpacking: image_unpack.h).
struct ImageLayerBlob {
  uint64_t offset = 0;  // of the blob's first byte in the archive file
  uint64_t size = 0;
  std::string compression;  // "" (a plain tar: its digest is the diff id), "gzip" or "zstd"
};

struct ImageIdentity {
  std::string archive_sha256;          // SHA-256 of the archive file, lower-case hex
  std::string image_id;                // "sha256:<hex>": the digest of the config blob
  std::vector<std::string> diff_ids;   // "sha256:<hex>" each, from config rootfs.diff_ids
  std::string format;                  // "oci-archive" or "docker-archive"
  std::vector<ImageLayerBlob> layers;  // one per diff id, in order
};

// Reads and checks the archive at `path` (a regular file, no symlink).
Result<ImageIdentity> inspect_image_archive(const std::string& path);

}  // namespace sealrun
