// SPDX-License-Identifier: Apache-2.0
// Running podman as the job user (see podman_runner.h).
#include "containment/podman_runner.h"

#include <fmt/format.h>
#include <pwd.h>
#include <unistd.h>

#include <cstdlib>

#include "core/syscall.h"

namespace sealrun::podman {

Result<JobUser> resolve_job_user(const std::string& configured_name) {
  return resolve_job_identity(configured_name)
      .context("rootless podman needs an unprivileged job user with subordinate ids");
}

SpawnOptions as_job_user(const JobUser& user, const StorageLayout& layout,
                         std::vector<std::string> argv) {
  SpawnOptions o;
  o.argv = std::move(argv);
  o.env = podman_environment(layout);
  if (user.drop) {
    o.uid = user.uid;
    o.gid = user.gid;
  }
  // The caller's cwd may be unreadable for the job user. (push_back: GCC 12 reports a false
  // -Wrestrict for assigning a one-character literal here once inlined.)
  o.cwd.push_back('/');
  o.new_session = true;
  o.die_with_parent = true;
  return o;
}

std::string describe_command(const std::vector<std::string>& argv) {
  // Skip the global flags (global_args() ends with "--events-backend none"): name the subcommand.
  size_t start = 0;
  for (size_t i = 0; i + 1 < argv.size(); ++i)
    if (argv[i] == "--events-backend") start = i + 2;
  std::string out = start == 0 ? argv.at(0) : "podman";
  if (start == 0) start = 1;
  for (size_t i = start; i < argv.size() && i < start + 3; ++i) out += " " + argv[i];
  if (argv.size() > start + 3) out += " ...";
  return out;
}

namespace {

// `podman load` tries each transport in turn and, when all fail, lists every complaint in a fixed
// order ("oci", "oci-archive", "docker-archive", "dir"): the last line is then "dir: open
// X/manifest.json: not a directory", true of any archive, and the real reason (a layer podman
// refused, say) is on another line. Those lines that only say the archive is not in a transport's
// format are dropped; what is left is the reason.
std::string load_failure_reason(const std::string& err, size_t listed_at) {
  std::vector<std::string> kept, all;
  for (size_t at = err.find("\n * ", listed_at); at != std::string::npos;
       at = err.find("\n * ", at + 1)) {
    size_t start = at + 4;
    size_t end = err.find('\n', start);
    std::string line =
        err.substr(start, end == std::string::npos ? std::string::npos : end - start);
    all.push_back(line);
    std::string transport = line.substr(0, line.find(':'));
    bool directory_transport = transport == "oci" || transport == "dir";  // an archive is a file
    bool not_this_format = (line.find("manifest.json") != std::string::npos ||
                            line.find("index.json") != std::string::npos) &&
                           (line.find("does not exist") != std::string::npos ||
                            line.find("no such file or directory") != std::string::npos);
    if (!directory_transport && !not_this_format) kept.push_back(line);
  }
  const auto& use = kept.empty() ? all : kept;
  std::string out;
  for (const auto& l : use) out += (out.empty() ? "" : "; ") + l;
  return out;
}

}  // namespace

std::string last_stderr_line(const std::string& err) {
  size_t listed = err.find("does not match any of the supported image formats");
  if (listed != std::string::npos) {
    std::string reason = load_failure_reason(err, listed);
    if (!reason.empty()) return reason;
  }
  size_t end = err.find_last_not_of(" \n\r\t");
  if (end == std::string::npos) return {};
  size_t start = err.rfind('\n', end);
  start = start == std::string::npos ? 0 : start + 1;
  return err.substr(start, end - start + 1);
}

Result<Captured> run_as_job_user(const JobUser& user, const StorageLayout& layout,
                                 std::vector<std::string> argv, int64_t timeout_ms,
                                 const std::string& cwd) {
  std::string what = describe_command(argv);
  SpawnOptions o = as_job_user(user, layout, std::move(argv));
  if (!cwd.empty()) o.cwd = cwd;
  auto c = SEALRUN_TRY(run_capture(std::move(o), timeout_ms, 256 * 1024));
  if (c.timed_out)
    return Error::make(fmt::format("{}: no answer within {} ms (killed)", what, timeout_ms));
  if (!c.status.success())
    return Error::make(
        fmt::format("{}: {}: {}", what, c.status.describe(), last_stderr_line(c.err)));
  return c;
}

Status Watchdog::disarm() {
  if (!child_.running()) return ok_status();
  Status wrote =
      write_end_ ? write_all(write_end_.get(), "done\n", "podman watchdog pipe") : ok_status();
  write_end_.reset();
  auto st = child_.wait_for(10 * 1000);
  if (!st.ok() || !st->has_value()) {
    child_.kill_and_reap();
    return Error::make("podman watchdog did not exit after \"done\"; killed");
  }
  return wrote;
}

Result<Watchdog> start_watchdog(const JobUser& user, const StorageLayout& layout,
                                const HostFacts& facts, const std::string& run_id) {
  auto pipe = SEALRUN_TRY(make_pipe());
  std::vector<std::string> argv = {
      "/bin/sh", "-c",
      // The second attempt only while the storage still exists: after sweep removed it, podman
      // would recreate its directories. (One script in two literals, not two arguments.)
      // NOLINTNEXTLINE(bugprone-suspicious-missing-comma)
      "g=$1; shift; read line; [ \"$line\" = done ] && exit 0; \"$@\" >/dev/null 2>&1; "
      "sleep 1; [ -d \"$g\" ] || exit 0; exec \"$@\" >/dev/null 2>&1",
      "sealrun-podman-watchdog", layout.graph_root};
  auto rm = rm_argv(layout, facts, run_id);
  argv.insert(argv.end(), rm.begin(), rm.end());
  SpawnOptions o = as_job_user(user, layout, std::move(argv));
  o.stdin_fd = pipe.read_end.get();
  o.die_with_parent = false;  // it must outlive a killed controller: that is its purpose
  auto child = SEALRUN_TRY_CTX(spawn(o), "start the podman watchdog");
  return Watchdog(std::move(child), std::move(pipe.write_end));
}

Result<std::string> podman_output(const JobUser& user, const StorageLayout& layout,
                                  std::vector<std::string> argv, int64_t timeout_ms) {
  auto c = SEALRUN_TRY(run_as_job_user(user, layout, std::move(argv), timeout_ms));
  return std::move(c.out);
}

}  // namespace sealrun::podman
