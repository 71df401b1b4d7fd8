// SPDX-License-Identifier: Apache-2.0
// `sealrun admit freeze --learn -- ARGV`: freeze the admission as usual, run its command once
// through the run pipeline in a learning sandbox (the host trees /usr, /etc and the real /bin,
// /lib* shown read-only besides the pins; still bwrap, the job user, no network, a resource group,
// the admission's wall clock), record every host file it opened or executed and every directory it
// listed (learn/access_recorder.h) and every host path it looked up (learn/lookup_tracer.h), find
// the links it needed (learn/closure.h, learn/lookup_closure.h), drop what a pinned tree, the
// toolchain or a mount shows instead, hash the closure, run the learned admission once more as
// `sealrun run` would (the proving run, controller/run/learn_prove.h), and only when that builds
// too write the admission with host_files, host_links and host_dirs added. The learning and proving
// runs' state, scratch and outputs are thrown away; a failed command writes no admission.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "admission/freeze.h"
#include "core/result.h"
#include "learn/closure_exclude.h"

namespace sealrun::cli {

struct LearnOptions {
  size_t max_files = 200000;
  uint64_t max_bytes = 32ull << 30;  // hashed in all
  int live_output_fd = -1;           // where the learning job's output is shown (-1: nowhere)
  std::function<void(uint64_t, uint64_t)> hash_progress;
  // --learn-exclude: paths left out of the closure (learn/closure_exclude.h), checked first.
  std::vector<std::string> exclude;
};

struct LearnedAdmission {
  std::string path;
  std::string sha256;
  size_t files = 0, links = 0, dirs = 0;
  uint64_t bytes = 0;    // hashed
  int64_t learn_ms = 0;  // the learning run, freeze of the base admission included
  int64_t hash_ms = 0;   // links found and files hashed
  std::vector<learn::Exclusion> excluded;  // the generated /etc paths, then --learn-exclude's
  int64_t prove_ms = 0;                    // the proving run of the learned admission
  size_t lookups = 0;                      // distinct host paths the learning run looked up
  size_t dropped = 0;  // closure entries dropped under a pinned tree, the toolchain or a mount
};

// The host trees a learning sandbox shows: those of /usr /bin /sbin /lib /lib32 /lib64 /libx32
// /etc that are real directories here (links such as /bin -> usr/bin are recorded as links).
std::vector<std::string> learning_host_trees();

Result<LearnedAdmission> freeze_learned(const admission::FreezeRequest& request,
                                        const LearnOptions& options);

}  // namespace sealrun::cli
