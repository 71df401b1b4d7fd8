// SPDX-License-Identifier: Apache-2.0
// The pin images: each pinned tree (toolchain, --tree, an unpacked image root) and each learned
// closure served to a bwrap job from a read-only EROFS image that cannot change once it was
// verified (docs/view.md, "How pinned bytes are served"). A file changed on the host while the
// job runs — even one changed and put back before the job ends — then never reaches the job.
//
// Content-addressed and cached: STATE/pins/<key>/image.erofs (root's, 0400, in 0700 directories)
// with image.json beside it (the image file's own SHA-256 and the stat identity it had when that
// was taken). The key of a tree is its pinned semantic tree digest ("tree-<hex>"); the key of a
// closure is the SHA-256 of its list of (job path, SHA-256, mode, owner) ("closure-<hex>").
//
// Built once, where no change can slip in between the proof and the bytes served: a tree's image
// is made by mkfs.erofs from the host tree and then mounted and hashed as a tree itself — only an
// image whose contents have exactly the pinned digest is kept (a tree changed between the run's
// verification and the build is refused, like any changed pin). A closure's files are copied into
// this controller's private temporaries while they are hashed (a copy whose bytes are not the
// pinned ones is refused), the image made from the copies, and each file read back from the
// mounted image against its pin. The image is built in STATE/tmp/<controller>/ and renamed into
// pins/ whole, so pins/ holds only verified images.
//
// Before each use, the image file is opened read-only and its identity (device, inode, size,
// mtime, ctime) compared with the one recorded; a difference (or --rehash) hashes the file whole
// against its recorded SHA-256. An image that fails (tampered, truncated) is removed and built
// again from the verified tree — never used. The descriptor checked is the one the loop device
// is bound to. A run holds pins/<key> with a shared flock while its job may see the image; an image
// is replaced only under an exclusive one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "controller/common/state_dir.h"
#include "core/result.h"
#include "core/unique_fd.h"

namespace sealrun::run {

struct PinImage {
  std::string key;       // "tree-<hex>" or "closure-<hex>"
  std::string sha256;    // the image file's SHA-256 (as recorded)
  UniqueFd image;        // the image file, O_RDONLY: what the loop device is bound to
  UniqueFd lock;         // pins/<key>, flock'ed shared while the job may see it
  bool built = false;    // made by this run (else found in the cache)
  bool hashed = false;   // a cached image whose identity differed (or --rehash): hashed whole
  std::string replaced;  // why a cached image was removed and built again ("" if not)
  int64_t build_ms = 0;  // mkfs and the proof of its contents (built only)
  uint64_t bytes = 0;    // the image file's size
};

// A pin image build refused because the bytes read are not the pinned ones: a pin changed on the
// host (the run is refused like any changed pin, exit 3). Other errors are the facility's.
struct PinMismatch {
  static constexpr const char* kPrefix = "pinned bytes changed: ";
};
bool is_pin_mismatch(const Error& e);

// Whether images can be made and mounted here; empty when they can, else why not (for the
// receipt: the pins are then bound live). Root, /dev/loop-control, erofs, mkfs.erofs.
std::string pin_images_unavailable();

struct PinImageRequest {
  const StateDir* state = nullptr;
  std::string temp_dir;  // this controller's temporaries (absolute, below the state directory)
  std::string run_id;    // names the loop devices (pin_mount.h)
  bool rehash = false;   // hash a cached image whole even when its identity is unchanged
};

// The verified image of the directory `tree`, whose semantic tree digest is `tree_sha256` (hex).
Result<PinImage> tree_pin_image(const PinImageRequest& req, const std::string& tree,
                                const std::string& tree_sha256);

struct ClosureFile {
  std::string path;    // the host path, which is also its job path
  std::string sha256;  // pinned (hex)
};
// The verified image of a learned closure: each file at its job path.
Result<PinImage> closure_pin_image(const PinImageRequest& req,
                                   const std::vector<ClosureFile>& files);

// pins/<rel> (e.g. "pins/tree-<hex>") flock'ed shared, or exclusive (no run holds it), without
// waiting: "<rel> is in use by another run" when that cannot be had now.
Result<UniqueFd> lock_pin_dir(const StateDir& state, const std::string& rel, bool exclusive);

}  // namespace sealrun::run
