// SPDX-License-Identifier: Apache-2.0
// `sealrun rebuild --vary fileordering` (docs/rebuild.md): the job's read-only source is served
// from a copy whose directories list their entries in another order than the verified copy the
// control saw. The source's verified copy lies on the state directory's file system, whose order
// (ext4: the order of the names' hashes, the same for the same names) a second copy there would
// repeat; so the copy is written on a tmpfs (/dev/shm), which lists a directory's entries by when
// they were made, newest first: copying in the order the verified copy lists them turns every
// directory's order round. The copy is checked against the admitted manifest like the verified
// one, and each directory's order is compared with the original's; it is removed with the run.
// A controller killed before that leaves it in /dev/shm, named
// sealrun-fileordering-<id>-<controller pid>.<its start time>-XXXXXX: `sealrun sweep` removes it
// with the rest of the dead controller's run (the pid and start tell it from another controller's
// run of the same id in another state directory).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "containment/spec.h"
#include "controller/run/run_context.h"
#include "core/result.h"
#include "core/sweep_step.h"
#include "fingerprint/source.h"

namespace sealrun::run {

// What the copy achieved: directories holding two entries or more, and how many of them list in
// another order than the original.
struct ReorderResult {
  std::string path;  // the copy's root, which the job's source mount now binds
  size_t directories = 0;
  size_t reordered = 0;
};

// Copies `source_root` (verified against `manifest`) onto a tmpfs below `base` ("/dev/shm"), in
// a new directory whose name starts with `name_prefix` (reordered_copy_prefix()), in another
// order and checks it; `holder` keeps the copy and removes it when released.
Result<ReorderResult> reordered_copy(const std::string& source_root, const Manifest& manifest,
                                     const std::string& base, const std::string& name_prefix,
                                     std::shared_ptr<void>* holder);

// The name's start for a run's copy: "sealrun-fileordering-<id>-<pid>.<start>-".
std::string reordered_copy_prefix(const std::string& run_id, pid_t controller_pid,
                                  const std::string& controller_start);

// `sealrun sweep`, for the record of a run whose controller is gone: removes the copies it left
// below `base`, one step each.
std::vector<SweepStep> sweep_reordered_copies(const GrantRecord& r,
                                              const std::string& base = "/dev/shm");

// For the run: when the rebuild varies fileordering and the source is read-only, points the
// spec's source mount at a reordered copy (kept in run.reordered_source) and warns with what it
// did; a writable source is left as it is, with a warning saying so.
Status vary_file_order(RunContext& run, ContainmentSpec& spec);

}  // namespace sealrun::run
