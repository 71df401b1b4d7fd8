// SPDX-License-Identifier: Apache-2.0
// The run's pinned trees, image root and closure served from pin images (pin_images.h,
// docs/view.md "How pinned bytes are served"): for a bwrap grant of a controller run as root,
// after the image root is planned and before the view is recorded, each read-only pinned mount
// and the closure files get a verified image, which the launch mounts read-only for the job alone
// (bwrap: containment/pin_mount.h; podman: containment/podman_pins.h). Where that cannot be done
// (no root, no loop devices or erofs, a learning run) they are bound live from the host, and the
// receipt says so: each view entry's `served`, and a note naming why.
#pragma once

#include "controller/run/run_context.h"

namespace sealrun::run {

// Exit 3 when the bytes read for an image are not the pinned ones (a pin changed since it was
// verified); an image that cannot be made for another reason leaves that entry live, with a note.
StageStatus serve_pins_from_images(RunContext& run);

}  // namespace sealrun::run
