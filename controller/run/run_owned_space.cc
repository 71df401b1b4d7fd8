// SPDX-License-Identifier: Apache-2.0
// make_owned_space(), remove_owned_space(): see run_owned_space.h.
#include "controller/run/run_owned_space.h"

#include <unistd.h>

#include "containment/ownedfs/ownedfs.h"
#include "controller/run/run_dirs.h"

namespace sealrun::run {

uint64_t owned_max_inodes(const admission::Limits& limits) {
  return limits.owned_max_inodes != 0 ? limits.owned_max_inodes
                                      : ownedfs::default_owned_max_inodes(limits.owned_max_bytes);
}

void make_owned_space(RunContext& run) {
  const auto& limits = run.doc().limits;
  receipt::OwnedSpaceRecord space{"directory", limits.owned_max_bytes, owned_max_inodes(limits),
                                  ""};
  ownedfs::Availability host;
  if (run.deps.probe_owned_fs) {
    host = run.deps.probe_owned_fs();
  } else {
    host.why = "not probed (this controller was built without the owned file system)";
  }
  std::string why =
      host.available ? ownedfs::unfit_shape(space.size_bytes, space.inodes) : host.why;
  if (why.empty()) {
    ownedfs::OwnedFsSpec spec;
    spec.state_dir = run.layout.state_dir;
    spec.id = run.req.id;
    spec.mount_point = run.layout.owned_root;
    spec.size_bytes = space.size_bytes;
    spec.inodes = space.inodes;
    // Like the claimed directory it replaces: root's, 0711, so the job user can reach what is its
    // own inside (scratch/, out/) but never rename or remove the marker.
    spec.owner_uid = ::geteuid();
    spec.owner_gid = ::getegid();
    spec.root_mode = 0711;
    spec.marker_name = kOwnedMarker;
    spec.marker_text = run.req.id + "\n";
    auto fs = ownedfs::create_owned_fs(spec);
    if (fs) {
      space.kind = "filesystem";
      space.size_bytes = fs->size_bytes;
      space.inodes = fs->inodes;
      space.made = fs->made_by;
      run.owned_fs = std::move(*fs);
    } else {
      why = "the owned file system could not be made: " + fs.error().message();
    }
  }
  space.why_not = why;
  run.receipt.owned_space = space;
}

void remove_owned_space(RunContext& run) {
  if (!run.owned_fs) return;
  record_owned_space_removal(run, ownedfs::remove_owned_fs(*run.owned_fs));
}

void record_owned_space_removal(RunContext& run, const std::vector<ownedfs::Step>& steps) {
  if (!run.owned_fs) return;
  bool left = false;
  for (const auto& step : steps) {
    left |= step.left;
    run.cleanup_action(
        "remove the owned file system",
        step.left ? Status(Error::make(step.what + ": " + step.outcome)) : ok_status(),
        step.what + ": " + step.outcome);
  }
  if (!left) run.owned_fs.reset();
}

}  // namespace sealrun::run
