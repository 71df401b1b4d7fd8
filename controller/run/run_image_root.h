// SPDX-License-Identifier: Apache-2.0
// The image's root file system for a bubblewrap run (docs/view.md): the pinned archive's layers,
// each verified against its diff id, unpacked once into a content-addressed, read-only cache,
// STATE/images/<image id hex>/rootfs, which later runs share. The unpacking happens in this
// controller's temporaries (STATE/tmp/<pid>.<start>/image-<hex>), which `sealrun sweep` removes
// when the controller died, and is renamed into place whole, so a rootfs under images/ is always
// complete, with the semantic tree digest of what was unpacked beside it (rootfs.tree). Before
// each use the rootfs is verified against that digest through the digest cache (a stat walk when
// nothing changed); one that changed is removed and unpacked again from the pinned archive. Its
// entries then become the job's root entries (view kind `image`).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "controller/run/run_context.h"
#include "fingerprint/cached_tree.h"

namespace sealrun::run {

// How image_rootfs() reports its proof: the cache's use, the verification of a rootfs found in
// place (recorded digest, observed digest or error, equal), and a fresh unpacking's digest.
struct RootfsCheck {
  bool rehash = false;  // --rehash: the digest cache is not read
  std::function<void(const PinCacheRecord&)> pin_cache = [](const PinCacheRecord&) {};
  std::function<void(const std::string&, const std::string&, bool)> verified =
      [](const std::string&, const std::string&, bool) {};
  std::function<void(const std::string&)> unpacked = [](const std::string&) {};
};

struct ImageRoot {
  std::string rootfs;  // STATE/images/<hex>/rootfs
  UniqueFd lock;       // images/<hex>, flock'ed shared: hold it while a job may see the rootfs
};

// STATE/images/<hex>/rootfs for the admitted image, verified against the digest recorded when it
// was unpacked; unpacked (again) when absent, unrecorded or changed (refused when it must be
// replaced while another run holds it).
Result<ImageRoot> image_rootfs(const StateDir& state, const std::string& temp_dir,
                               const admission::ImagePin& image, const RootfsCheck& check);

// images/<hex> opened and flock'ed (shared or exclusive), without waiting: an error names the
// directory when another holder has it.
Result<UniqueFd> lock_image_dir(const StateDir& state, const std::string& hex, bool exclusive);

// For a bwrap grant of an admission with an image: the rootfs's entries added to the grant's
// spec (mounts first, so every other entry binds on top) and its links to the view.
Status add_image_root(RunContext& run);

// After the job, for a run whose job saw an image root (bwrap): the rootfs still has the digest
// recorded when it was unpacked, the same check as before the job, as the verification
// "image root (...) (after the run)" (view_recheck.h records it; a change fails the run, exit 5).
// Nothing for a run without one. Reads the run, changes nothing in it: safe on a thread of its own
// while the run holds the image's lock.
std::optional<receipt::Verification> recheck_image_root(
    const RunContext& run, const std::function<void(const PinCacheRecord&)>& pin_cache);

}  // namespace sealrun::run
