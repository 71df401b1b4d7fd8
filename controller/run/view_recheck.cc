// SPDX-License-Identifier: Apache-2.0
// The check after the job on a thread of its own: see view_recheck.h.
#include "controller/run/view_recheck.h"

#include <fmt/format.h>

#include <future>
#include <string>
#include <vector>

#include "admission/verify.h"
#include "controller/run/run_image_root.h"
#include "core/exit_codes.h"
#include "fingerprint/cached_tree.h"

namespace sealrun::run {

struct PendingViewRecheck {
  struct Found {
    std::vector<receipt::Verification> verifications;
    std::vector<PinCacheRecord> pin_cache;  // in the order the checks used the digest cache
    std::string changed;                    // "; <target>: <observed>" for each changed pin
    std::string image_root_changed;         // the image root's target and observed digest
  };
  std::future<Found> found;
};

namespace {

// Reads the run (its admitted document, state directory, image lock and --rehash), never writes
// it: everything it finds is returned, for finish_view_recheck() to record on the run's thread.
PendingViewRecheck::Found check_view(const RunContext& run) {
  PendingViewRecheck::Found f;
  auto keep_cache_use = [&f](const PinCacheRecord& r) { f.pin_cache.push_back(r); };
  admission::VerifyOptions options;
  // Through the digest cache, like the check before the run: a tree the job could not write is
  // re-verified by a stat walk, any changed file re-hashed.
  options.digest_cache_state_dir = run.layout.state_dir;
  options.rehash = run.req.rehash;
  options.on_pin_cache = keep_cache_use;
  for (const admission::PinCheck& c : admission::verify_view_pins(run.doc(), options)) {
    f.verifications.push_back({c.target + " (after the run)", c.expected, c.observed, c.passed()});
    if (c.passed()) continue;
    std::string observed = c.observed.size() > 300 ? c.observed.substr(0, 300) + "…" : c.observed;
    f.changed += fmt::format("; {}: {}", c.target, observed);
  }
  // Under bwrap, the unpacked image the job saw.
  if (auto root = recheck_image_root(run, keep_cache_use)) {
    if (!root->pass)
      f.image_root_changed = fmt::format("{}: observed {}", root->target, root->observed);
    f.verifications.push_back(std::move(*root));
  }
  return f;
}

}  // namespace

void start_view_recheck(RunContext& run) {
  auto pending = std::make_shared<PendingViewRecheck>();
  const RunContext& reader = run;
  pending->found = std::async(std::launch::async, [&reader] { return check_view(reader); });
  run.view_recheck = std::move(pending);
}

void finish_view_recheck(RunContext& run) {
  if (!run.view_recheck) return;
  PendingViewRecheck::Found f = run.view_recheck->found.get();
  run.view_recheck.reset();
  for (receipt::Verification& v : f.verifications)
    run.receipt.verifications.push_back(std::move(v));
  auto record_cache_use = run.pin_cache_recorder();
  for (const PinCacheRecord& r : f.pin_cache) record_cache_use(r);
  if (!f.changed.empty())
    run.record_failure(
        {kExitJobFailed, "the pinned view changed on the host during the run" + f.changed});
  if (!f.image_root_changed.empty())
    run.record_failure({kExitJobFailed, "the pinned view changed on the host during the run; " +
                                            f.image_root_changed});
}

}  // namespace sealrun::run
