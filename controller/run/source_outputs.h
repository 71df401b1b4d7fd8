// SPDX-License-Identifier: Apache-2.0
// Outputs taken from a writable source (admission mounts.outputs_from "source", docs/admission.md).
// The job changed the run's private copy of the source (STATE/exports/.../source, never the host's
// tree), and the output walk (output_walk.h) of that copy lists everything in it, inputs included.
// What the job made is what differs from the admitted source.manifest: the regular files that are
// new, or whose size or SHA-256 changed. Those are moved to the same relative path under
// results/<id>/out, so that the run's results, outputs.jsonl and the receipt look exactly as if the
// job had written them to /out (and `sealrun runner` installs them from there).
#pragma once

#include <string>

#include "controller/common/state_dir.h"
#include "controller/receipt/output_walk.h"
#include "core/result.h"
#include "fingerprint/source.h"

namespace sealrun::run {

// Keeps in `walk` only the regular files that are new or changed against `manifest` (same path,
// size and SHA-256 is an input left as it was); symlinks and other kinds are not outputs here (a
// source manifest lists regular files only, so an input symlink could not be told from a new one).
// A hard link whose first path was an unchanged input is named after the first path kept instead,
// and `walk.bytes` becomes the bytes of the distinct files kept.
void keep_changed_source_files(OutputWalk& walk, const Manifest& manifest);

// Moves every output of `walk` from `source_root` to the same path under `output_dir` (both below
// the held state directory, on its file system), making the directories on the way; nothing is
// followed through a link and nothing in `output_dir` is replaced. Asks `stop` now and then: an
// interruption is an error naming why.
Status move_source_outputs(const StateDir& state, const std::string& source_root,
                           const std::string& output_dir, const OutputWalk& walk,
                           const StopCheck& stop);

}  // namespace sealrun::run
