// SPDX-License-Identifier: Apache-2.0
// serve_pins_from_images(): see run_pin_images.h.
#include "controller/run/run_pin_images.h"

#include <fmt/format.h>

#include "controller/run/pin_images.h"
#include "core/bounded_file.h"
#include "core/exit_codes.h"

namespace sealrun::run {

namespace {

bool is_pinned_tree(const MountSpec& m) {
  return m.access == MountSpec::Access::kReadOnly &&
         (m.kind == ViewKind::kToolchain || m.kind == ViewKind::kTree) &&
         m.pin.rfind("sha256:", 0) == 0 && m.pin.size() == 71;
}

bool has_pinned_host_bytes(const ContainmentSpec& spec) {
  for (const auto& m : spec.mounts)
    if (is_pinned_tree(m) || m.kind == ViewKind::kImage) return true;
  for (const auto& e : spec.files_and_links)
    if (e.kind == ViewKind::kClosure) return true;
  return false;
}

// The receipt's verification of one image: its own SHA-256, how it was checked, and whether it
// was built by this run.
void record(RunContext& run, const std::string& what, const PinImage& img) {
  std::string how = img.built    ? fmt::format("built now in {} ms", img.build_ms)
                    : img.hashed ? "hashed whole"
                                 : "identity as recorded";
  std::string target = fmt::format("pin image of {} (STATE/pins/{})", what, img.key.substr(0, 20));
  run.receipt.verifications.push_back(
      {target, "sha256:" + img.sha256, "sha256:" + img.sha256, true, how});
  if (!img.replaced.empty())
    run.warn(
        fmt::format("the cached pin image {} was not used ({}): built again from the "
                    "verified pin",
                    img.key.substr(0, 20), img.replaced));
}

// The unpacked image root's recorded tree digest (run_image_root.h), "" when there is none.
std::string image_root_digest(const RunContext& run) {
  if (!run.doc().image) return {};
  std::string hex = run.doc().image->image_id.substr(7);
  auto text = read_bounded_file(run.state->fd(), "images/" + hex + "/rootfs.tree", 128);
  if (!text || text->size() != 65 || text->back() != '\n') return {};
  return text->substr(0, 64);
}

}  // namespace

StageStatus serve_pins_from_images(RunContext& run) {
  ContainmentSpec& spec = run.grant->spec;
  // A learning run shows the job the host's trees themselves (its view entries say `live`).
  if (!has_pinned_host_bytes(spec) || run.req.learning) return stage_ok();
  std::string why;
  if (!run.job_user.drop)
    why = "the controller is not root";
  else if (!run.chosen->serves_pins_from_images())
    why = "under " + run.grant->mechanism +
          " they cannot be served from images here (podman: only from the controller's own "
          "mount namespace)";
  else if (run.req.pins_live)
    why = "asked for by the caller";
  else
    why = pin_images_unavailable();
  if (!why.empty()) {
    run.warn("pinned trees and closure files were bound live from the host (" + why +
             "): a change made on the host during the job could reach it; each is checked again "
             "after the job");
    return stage_ok();
  }
  PinImageRequest req{&*run.state, run.temp_dir, run.req.id, run.req.rehash};
  auto failed = [&](const std::string& what, const Error& e) -> StageStatus {
    if (is_pin_mismatch(e))
      return stage_fail(kExitAdmissionRefused, "admission refused: " + what + ": " + e.message());
    run.warn(fmt::format("{} was bound live from the host: its pin image could not be made: {}",
                         what, e.message()));
    return stage_ok();
  };
  for (MountSpec& m : spec.mounts) {
    if (!is_pinned_tree(m)) continue;
    std::string what = std::string(view_kind_name(m.kind)) + " " + m.target;
    auto img = tree_pin_image(req, m.source, m.pin.substr(7));
    if (!img) {
      if (auto st = failed(what, img.error()); !st.ok()) return st;
      continue;
    }
    record(run, what, *img);
    m.image_fd = img->image.get();
    run.pin_holds.push_back(std::move(img->image));
    run.pin_holds.push_back(std::move(img->lock));
  }
  // The unpacked image root (bwrap): one image of the whole rootfs, each entry a directory in it.
  const std::string digest = image_root_digest(run);
  const std::string rootfs = run.doc().image ? run.state->path() + "/images/" +
                                                   run.doc().image->image_id.substr(7) + "/rootfs"
                                             : "";
  bool image_entries = false;
  for (const MountSpec& m : spec.mounts)
    image_entries = image_entries || (m.kind == ViewKind::kImage && !rootfs.empty() &&
                                      m.source.rfind(rootfs + "/", 0) == 0);
  if (image_entries && !digest.empty()) {
    auto img = tree_pin_image(req, rootfs, digest);
    if (!img) {
      if (auto st = failed("the image root", img.error()); !st.ok()) return st;
    } else {
      record(run, "the image root", *img);
      for (MountSpec& m : spec.mounts)
        if (m.kind == ViewKind::kImage && m.source.rfind(rootfs + "/", 0) == 0) {
          m.image_fd = img->image.get();
          m.image_subpath = m.source.substr(rootfs.size() + 1);
        }
      run.pin_holds.push_back(std::move(img->image));
      run.pin_holds.push_back(std::move(img->lock));
    }
  }
  std::vector<ClosureFile> closure;
  for (const ViewEntry& e : spec.files_and_links)
    if (e.kind == ViewKind::kClosure && e.pin.rfind("sha256:", 0) == 0)
      closure.push_back({e.host_path, e.pin.substr(7)});
  if (!closure.empty()) {
    std::string what = fmt::format("the closure ({} files)", closure.size());
    auto img = closure_pin_image(req, closure);
    if (!img) return failed(what, img.error());
    record(run, what, *img);
    spec.closure_image_fd = img->image.get();
    run.pin_holds.push_back(std::move(img->image));
    run.pin_holds.push_back(std::move(img->lock));
    // The start gate's check that each bound closure file is the host file hashed is for files
    // bound live; these are the image's, each read back against its pin when the image was made.
    run.closure_identities.clear();
  }
  return stage_ok();
}

}  // namespace sealrun::run
