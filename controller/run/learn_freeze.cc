// SPDX-License-Identifier: Apache-2.0
// freeze_learned(): see learn_freeze.h.
#include "controller/run/learn_freeze.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "admission/document.h"
#include "controller/common/host_config.h"
#include "controller/run/learn_prove.h"
#include "controller/run/run_pipeline.h"
#include "controller/run/run_plan.h"
#include "core/atomic_write.h"
#include "core/generated_etc.h"
#include "core/syscall.h"
#include "core/temp_dir.h"
#include "fingerprint/sha256.h"
#include "learn/access_recorder.h"
#include "learn/closure.h"
#include "learn/closure_carry.h"
#include "learn/closure_pins.h"
#include "learn/lookup_closure.h"
#include "learn/lookup_syscalls.h"
#include "learn/lookup_tracer.h"

namespace sealrun::cli {

std::vector<std::string> learning_host_trees() {
  std::vector<std::string> trees;
  for (const char* path :
       {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"}) {
    struct stat st {};
    if (::lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) trees.emplace_back(path);
  }
  return trees;
}

Result<LearnedAdmission> freeze_learned(const admission::FreezeRequest& request,
                                        const LearnOptions& options) {
  if (request.argv.empty())
    return Error::make(
        "--learn: give the command to learn after --, e.g. admit freeze --out A.json --source . "
        "--learn -- make");
  if (request.out.empty()) return Error::make("--out: a path for the admission is required");
  // Never learned: the job's generated /etc files, and what the caller excluded.
  std::vector<learn::Exclusion> exclusions =
      SEALRUN_TRY(learn::learning_exclusions(options.exclude));
  if (::geteuid() != 0)
    return Error::make(
        "--learn records the job's file accesses with fanotify, which needs root; run it as "
        "root (the job itself still runs as the unprivileged job user)");
  struct stat st {};
  if (!request.force && ::lstat(request.out.c_str(), &st) == 0)
    return Error::make(fmt::format("{}: exists; pass --force to replace it", request.out));

  int64_t started = monotonic_ms();
  auto tmp = SEALRUN_TRY_CTX(ScopedTempDir::create("sealrun-learn"), "the learning run's state");
  admission::FreezeRequest base_request = request;
  base_request.out = tmp.path() + "/base-admission.json";
  base_request.force = true;
  base_request.closure_follows = true;  // no --toolchain: the learned closure is the toolchain
  auto base = SEALRUN_TRY(admission::freeze_admission(base_request));
  const admission::AdmissionDocument& doc = base.document;
  if (doc.image)
    return Error::make(
        "--learn with an image: the job of an image admission sees the image's file system, "
        "not the host's, so there is no host closure to learn; leave out --image (or --learn)");

  const std::vector<std::string> roots = learning_host_trees();
  // The job's own mounts are pinned (source, toolchain, trees) or thrown away (out, scratch,
  // tmp): nothing at or below them is recorded, and pinned trees win over the host's.
  // (/proc and /dev among them: kernel-made, never pinned.)
  const std::vector<std::string> places = learn::pinned_places(doc);
  const std::vector<std::string>& excluded = places;
  std::vector<std::string> unmarked = excluded;  // and the never-learned paths' own mounts
  for (const learn::Exclusion& e : exclusions) unmarked.push_back(e.path);
  // Room for the directories besides the files; build_closure() applies max_files itself.
  auto recorder = SEALRUN_TRY(learn::AccessRecorder::create(options.max_files * 2 + 1024));
  auto tracer = learn::LookupTracer::create({roots, excluded, options.max_files * 2 + 1024});

  run::RunRequest req;
  req.admission_path = base.path;
  req.sha256 = base.sha256;
  req.id = run::generated_run_id("learn");
  req.mechanism = MechanismKind::kBwrap;
  req.state_dir = tmp.path() + "/state";
  req.live_output_fd = options.live_output_fd;
  learn::ObservedAccess seen;
  learn::ObservedLookups looked;
  req.learning = run::LearningRun{roots,
                                  [&](pid_t pid) -> Status {
                                    SEALRUN_TRY(recorder->watch_sandbox(pid, roots, unmarked));
                                    return tracer->attach(pid);
                                  },
                                  [&] {
                                    seen = recorder->finish();
                                    looked = tracer->finish();
                                  },
                                  learn::traced_syscalls(learn::TraceSet::kLearning)};
  run::RunOutcome o = run::run_pipeline(req, run::default_pipeline_deps(mechanism_context()));
  if (!seen.incomplete && seen.events == 0) seen = recorder->finish();  // the job never ran
  looked = tracer->finish();
  if (o.exit_code != 0 || o.receipt.state != "built")
    return Error::make(fmt::format(
        "the command failed while learning (exit {}: {}); no admission was written{}", o.exit_code,
        o.receipt.reason.empty() ? o.message : o.receipt.reason, learn_stderr_tail(o)));
  if (recorder->marked().empty())
    return Error::make("the learning run ended without its file accesses being recorded");
  if (seen.incomplete)
    return Error::make("learning could not record every host file the command opened: " +
                       *seen.incomplete + "; no admission was written");
  if (looked.incomplete)
    return Error::make("learning could not record every host path the command looked up: " +
                       *looked.incomplete + "; no admission was written");
  LearnedAdmission out;
  out.learn_ms = monotonic_ms() - started;
  out.lookups = looked.followed.size() + looked.unfollowed.size();

  started = monotonic_ms();
  learn::ClosureLimits limits;
  limits.max_files = options.max_files;
  learn::exclude_observed(seen, exclusions);
  auto closure = SEALRUN_TRY_CTX(learn::build_closure(seen, roots, limits), "the learned closure");
  SEALRUN_TRY_CTX(learn::add_lookups(looked, roots, excluded, options.max_files, &closure),
                  "the learned closure");
  // The generated /etc paths and --learn-exclude's leave the closure, looked-up entries included.
  learn::exclude_closure(closure, exclusions);
  out.dropped = learn::drop_under_places(places, &closure);
  auto pinned = SEALRUN_TRY(learn::pin_closure(closure, options.max_bytes, options.hash_progress));
  std::string bytes = SEALRUN_TRY(
      learn::checked_admission_bytes(admission::canonical_admission_bytes(doc), pinned));
  out.hash_ms = monotonic_ms() - started;

  // The proving run: the learned admission as `sealrun run` runs it, before anything is written.
  started = monotonic_ms();
  const std::string proving = tmp.path() + "/learned-admission.json";
  SEALRUN_TRY_CTX(write_file_atomic(proving, bytes, 0644), "write " + proving);
  // What the proving run's view shows besides the closure: the places, and the generated /etc.
  std::vector<std::string> shown = places;
  shown.insert(shown.end(), kGeneratedEtcPaths.begin(), kGeneratedEtcPaths.end());
  SEALRUN_TRY(prove_learned({proving, sha256_hex(bytes), tmp.path() + "/state",
                             options.live_output_fd, roots, excluded, shown, closure}));
  out.prove_ms = monotonic_ms() - started;
  SEALRUN_TRY_CTX(write_file_atomic(request.out, bytes, 0644), "write " + request.out);
  out.path = request.out;
  out.sha256 = sha256_hex(bytes);
  out.files = pinned.files.size();
  out.links = pinned.links.size();
  out.dirs = pinned.dirs.size();
  out.bytes = pinned.bytes;
  out.excluded = std::move(exclusions);
  return out;
}

}  // namespace sealrun::cli
