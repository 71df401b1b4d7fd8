// SPDX-License-Identifier: Apache-2.0
// run_child(): see action_child.h.
#include "remote/action_child.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include "core/syscall.h"

namespace sealrun::remote {

namespace {

constexpr size_t kStderrTail = 2048;

Result<std::string> file_tail(const std::string& path, size_t max) {
  auto fd = SEALRUN_TRY(open_at(AT_FDCWD, path, O_RDONLY | O_NOFOLLOW));
  auto st = SEALRUN_TRY(fstat_fd(fd.get(), path));
  off_t size = st.st_size;
  off_t start = size > static_cast<off_t>(max) ? size - static_cast<off_t>(max) : 0;
  if (::lseek(fd.get(), start, SEEK_SET) < 0) return Error::from_errno("seek " + path);
  return read_up_to(fd.get(), max, path);
}

}  // namespace

Result<ChildOutcome> run_child(const ChildRequest& r, const std::function<bool()>& cancelled,
                               int64_t poll_ms) {
  auto out = SEALRUN_TRY(
      open_at(AT_FDCWD, r.log_dir + "/run.stdout", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600));
  auto err = SEALRUN_TRY(
      open_at(AT_FDCWD, r.log_dir + "/run.stderr", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600));
  SpawnOptions o;
  // --quiet: the job's streams reach bb_worker from the run's kept logs; live on run.stderr they
  // would only bury sealrun's own message, whose tail explains a failure.
  o.argv = {r.sealrun, "run",         r.admission, "--sha256", r.sha256, "--id",
            r.id,      "--state-dir", r.state_dir, "--json",   "--quiet"};
  o.stdout_fd = out.get();
  o.stderr_fd = err.get();
  o.new_session = true;  // a terminal's Ctrl-C reaches the runner, which decides what stops
  o.die_with_parent = true;
  o.death_signal = SIGTERM;
  auto child = SEALRUN_TRY(spawn(o));
  out.reset();
  err.reset();

  ChildOutcome outcome;
  int64_t term_sent_ms = -1;
  for (;;) {
    auto done = SEALRUN_TRY(child.wait_for(poll_ms, &outcome.usage));
    if (done) {
      outcome.status = *done;
      break;
    }
    if (term_sent_ms < 0 && cancelled()) {
      // The run's own SIGTERM handling stops the job (TERM, grace, KILL, group emptied) and
      // writes the receipt; we wait for it however long that takes (bounded by its outer_s).
      SEALRUN_TRY(child.signal(SIGTERM));
      term_sent_ms = monotonic_ms();
      outcome.cancelled = true;
    }
  }
  if (term_sent_ms >= 0) outcome.stop_wait_ms = monotonic_ms() - term_sent_ms;
  if (auto tail = file_tail(r.log_dir + "/run.stderr", kStderrTail)) outcome.stderr_tail = *tail;
  return outcome;
}

}  // namespace sealrun::remote
