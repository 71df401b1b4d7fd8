// image_rootfs() and add_image_root(): see run_image_root.h.
#include "controller/run_image_root.h"

#include <fmt/format.h>
#include <stdio.h>
#include <sys/stat.h>

#include "containment/image_root.h"
#include "containment/view_plan.h"
#include "fingerprint/image_unpack.h"

namespace sealrun::run {

Result<std::string> image_rootfs(const StateDir& state, const std::string& temp_dir,
                                 const admission::ImagePin& image) {
  std::string hex = image.image_id.substr(7);  // "sha256:<hex>", checked by the parser
  std::string final_rel = "images/" + hex;
  std::string rootfs = state.path() + "/" + final_rel + "/rootfs";
  // Named by the image id, which is the digest of the config that lists the diff ids: an
  // existing directory there was unpacked from exactly these layers (and is root's, 0700 above).
  if (state.exists(final_rel + "/rootfs")) return rootfs;
  SEALRUN_TRY(state.ensure_subdir("images", 0700));
  std::string work = temp_dir + "/image-" + hex;
  SEALRUN_TRY(state.make_dir(work, 0755));
  SEALRUN_TRY(state.make_dir(work + "/rootfs", 0755));
  SEALRUN_TRY(state.make_dir(work + "/scratch", 0700));
  auto unpacked = unpack_image(image.archive, image.image_id, image.diff_ids, work + "/rootfs",
                               work + "/scratch");
  if (!unpacked) {
    (void)state.remove_tree(work);
    return std::move(unpacked).error().context("unpack image " + image.image_id);
  }
  SEALRUN_TRY(state.remove_tree(work + "/scratch"));
  std::string final_path = state.path() + "/" + final_rel;
  if (::rename(work.c_str(), final_path.c_str()) != 0) {
    int err = errno;
    (void)state.remove_tree(work);
    // Another run unpacked the same image first: theirs is as good as ours.
    if ((err == EEXIST || err == ENOTEMPTY) && state.exists(final_rel + "/rootfs")) return rootfs;
    return Error::with_errno(err, "rename " + work + " to " + final_path);
  }
  return rootfs;
}

Status add_image_root(RunContext& run) {
  const auto& doc = run.doc();
  if (!doc.image || !run.grant || run.grant->mechanism != "bwrap") return ok_status();
  std::string rootfs = SEALRUN_TRY(image_rootfs(*run.state, run.temp_dir, *doc.image));
  ContainmentSpec& spec = run.grant->spec;
  std::vector<std::string> others = {"/proc", "/dev", "/tmp"};
  for (const auto& m : spec.mounts) others.push_back(m.target);
  for (const auto& e : spec.files_and_links) others.push_back(e.job_path);
  auto plan = SEALRUN_TRY(plan_image_root(rootfs, doc.image->image_id, others));
  spec.mounts.insert(spec.mounts.begin(), plan.mounts.begin(), plan.mounts.end());
  spec.files_and_links.insert(spec.files_and_links.end(), plan.links.begin(), plan.links.end());
  return ok_status();
}

}  // namespace sealrun::run
