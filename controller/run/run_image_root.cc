// SPDX-License-Identifier: Apache-2.0
// image_rootfs() and add_image_root(): see run_image_root.h.
#include "controller/run/run_image_root.h"

#include <fmt/format.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "containment/image_root.h"
#include "containment/view_plan.h"
#include "core/bounded_file.h"
#include "core/exit_codes.h"
#include "fingerprint/cached_tree.h"
#include "fingerprint/image_unpack.h"
#include "fingerprint/tree.h"

namespace sealrun::run {

namespace {

std::string hex_of(const admission::ImagePin& image) {
  return image.image_id.substr(7);  // "sha256:<hex>", checked by the parser
}

// Unpacks the image into STATE/images/<hex>/rootfs (absent before) and records, beside it, the
// semantic tree digest of what was unpacked (rootfs.tree), taken before the rename into place.
Status unpack_into_state(const StateDir& state, const std::string& temp_dir,
                         const admission::ImagePin& image) {
  std::string hex = hex_of(image);
  SEALRUN_TRY(state.ensure_subdir("images", 0700));
  std::string work = temp_dir + "/image-" + hex;
  SEALRUN_TRY(state.make_dir(work, 0755));
  SEALRUN_TRY(state.make_dir(work + "/rootfs", 0755));
  SEALRUN_TRY(state.make_dir(work + "/scratch", 0700));
  auto layers = unpack_image(image.archive, image.image_id, image.diff_ids, work + "/rootfs",
                             work + "/scratch");
  Status unpacked =
      layers ? state.remove_tree(work + "/scratch") : Status(std::move(layers).error());
  if (unpacked) {
    auto digest = tree_digest(work + "/rootfs");
    unpacked = digest ? state.write_atomic(work + "/rootfs.tree", digest->sha256 + "\n", 0600)
                      : Status(std::move(digest).error());
  }
  if (!unpacked) {
    (void)state.remove_tree(work);
    return std::move(unpacked).error().context("unpack image " + image.image_id);
  }
  std::string final_path = state.path() + "/images/" + hex;
  if (::rename(work.c_str(), final_path.c_str()) != 0) {
    int err = errno;
    (void)state.remove_tree(work);
    // Another run unpacked the same image first: theirs is as good as ours (and is verified).
    if ((err == EEXIST || err == ENOTEMPTY) && state.exists("images/" + hex + "/rootfs"))
      return ok_status();
    return Error::with_errno(err, "rename " + work + " to " + final_path);
  }
  return ok_status();
}

// The digest recorded when the rootfs was unpacked, or "" when there is none that reads as one.
std::string recorded_digest(const StateDir& state, const std::string& hex) {
  auto text = read_bounded_file(state.fd(), "images/" + hex + "/rootfs.tree", 128);
  if (!text || text->size() != 65 || text->back() != '\n') return {};
  return text->substr(0, 64);
}

// The rootfs's digest now (through the digest cache: a stat walk when nothing changed) against
// `recorded`: the observed digest (or the error) and whether they are equal.
std::pair<std::string, bool> verify_rootfs(
    const StateDir& state, const std::string& rootfs, const std::string& recorded, bool rehash,
    const std::function<void(const PinCacheRecord&)>& pin_cache) {
  auto now = tree_digest_reporting({rootfs, state.path(), recorded, rehash, {}}, pin_cache);
  if (!now) return {"error: " + now.error().message(), false};
  return {now->sha256, !recorded.empty() && now->sha256 == recorded};
}

// How the receipt names the image root's checks.
std::string image_root_target(const std::string& hex) {
  return "image root (STATE/images/" + hex.substr(0, 12) + ")";
}

}  // namespace

Result<UniqueFd> lock_image_dir(const StateDir& state, const std::string& hex, bool exclusive) {
  std::string rel = "images/" + hex;
  auto fd = SEALRUN_TRY(state.open(rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (::flock(fd.get(), (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK)
      return Error::make(fmt::format("{} is in use by another run{}", rel,
                                     exclusive ? "" : " that is replacing it"));
    return Error::with_errno(errno, "lock " + rel);
  }
  return fd;
}

Result<ImageRoot> image_rootfs(const StateDir& state, const std::string& temp_dir,
                               const admission::ImagePin& image, const RootfsCheck& check) {
  std::string hex = hex_of(image);
  std::string rel = "images/" + hex;
  ImageRoot root{state.path() + "/" + rel + "/rootfs", {}};
  if (state.exists(rel + "/rootfs")) {
    // Held shared for the whole run: another run may use it too, but neither replaces it nor
    // `sweep --images` removes it while the job can see it.
    root.lock = SEALRUN_TRY(lock_image_dir(state, hex, false));
    std::string recorded = recorded_digest(state, hex);
    if (!recorded.empty()) {
      // Named by the image id (the digest of the config that lists the diff ids), so it was
      // unpacked from exactly these layers; that it still holds what was unpacked is proven
      // here, through the digest cache (a stat walk when nothing changed), before every use.
      auto [observed, same] =
          verify_rootfs(state, root.rootfs, recorded, check.rehash, check.pin_cache);
      check.verified(recorded, observed, same);
      if (same) return root;
    }
    // From before the digest was recorded, or changed since: replaced, only when no other run
    // uses it (upgrading our shared lock).
    if (::flock(root.lock.get(), LOCK_EX | LOCK_NB) != 0)
      return Error::with_errno(errno, rel + " must be unpacked again but is in use by another run");
    SEALRUN_TRY_CTX(state.remove_tree(rel), "remove the changed " + rel);
    root.lock.reset();
  }
  // Unpacked from the pinned archive, whose layers are verified against their diff ids on the way.
  SEALRUN_TRY(unpack_into_state(state, temp_dir, image));
  root.lock = SEALRUN_TRY(lock_image_dir(state, hex, false));
  std::string recorded = recorded_digest(state, hex);
  if (recorded.empty()) return Error::make("no tree digest recorded for " + rel + "/rootfs");
  check.unpacked(recorded);
  return root;
}

Status add_image_root(RunContext& run) {
  const auto& doc = run.doc();
  if (!doc.image || !run.grant || !run.chosen || !run.chosen->unpacks_image()) return ok_status();
  std::string target = image_root_target(hex_of(*doc.image));
  RootfsCheck check;
  check.rehash = run.req.rehash;
  check.pin_cache = run.pin_cache_recorder();
  // A changed cache is not the run's failure (it is replaced from the pinned archive before the
  // job sees it), so it is a warning, and the verification listed is the fresh unpacking's.
  check.verified = [&](const std::string& expected, const std::string& observed, bool same) {
    if (same)
      run.receipt.verifications.push_back({target, expected, observed, true});
    else
      run.warn(
          fmt::format("the {} no longer has the digest it was unpacked with ({}, not {}): "
                      "unpacked again from the pinned archive",
                      target, observed, expected));
  };
  check.unpacked = [&](const std::string& digest) {
    run.receipt.verifications.push_back({target + ", unpacked now", digest, digest, true});
  };
  ImageRoot root = SEALRUN_TRY(image_rootfs(*run.state, run.temp_dir, *doc.image, check));
  const std::string& rootfs = root.rootfs;
  run.image_lock = std::move(root.lock);  // released when the run ends
  ContainmentSpec& spec = run.grant->spec;
  std::vector<std::string> others = {"/proc", "/dev", "/tmp"};
  for (const auto& m : spec.mounts) others.push_back(m.target);
  for (const auto& e : spec.files_and_links) others.push_back(e.job_path);
  auto plan = SEALRUN_TRY(plan_image_root(rootfs, doc.image->image_id, others));
  spec.mounts.insert(spec.mounts.begin(), plan.mounts.begin(), plan.mounts.end());
  spec.files_and_links.insert(spec.files_and_links.end(), plan.links.begin(), plan.links.end());
  return ok_status();
}

std::optional<receipt::Verification> recheck_image_root(
    const RunContext& run, const std::function<void(const PinCacheRecord&)>& pin_cache) {
  const auto& doc = run.doc();
  if (!doc.image || !run.image_lock || !run.state) return std::nullopt;
  const std::string hex = hex_of(*doc.image);
  const std::string recorded = recorded_digest(*run.state, hex);
  const std::string rootfs = run.state->path() + "/images/" + hex + "/rootfs";
  auto [observed, same] = verify_rootfs(*run.state, rootfs, recorded, run.req.rehash, pin_cache);
  return receipt::Verification{image_root_target(hex) + " (after the run)", recorded, observed,
                               same};
}

}  // namespace sealrun::run
