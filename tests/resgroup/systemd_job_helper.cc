// SPDX-License-Identifier: Apache-2.0
// Test helper for the systemd back end, run by systemd_scope_test inside a test manager's mount
// and pid namespaces (the job's pid must mean something to the manager). Three modes:
//   systemd_job_helper allocate MIB     touch MIB mebibytes of memory, exit 0 if that worked
//   systemd_job_helper forkloop         fork sleeping children until fork fails; print
//                                       {"forked": N, "errno": E} and exit, leaving them behind
//   systemd_job_helper stubborn         ignore SIGTERM, leave a setsid double-fork orphan that
//                                       ignores it too, and never exit
//   systemd_job_helper run --bus ADDR --cgroupfs DIR --run-id ID --memory-max B --memory-high B
//                      --swap-max B --pids-max N --grace-ms MS [--job-wait-ms MS] -- JOB...
//     drives the back end exactly as the controller does — probe, create, spawn held, adopt,
//     read back, release, wait, memory report, stop, remove — and prints one JSON document.
#include <errno.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "containment/resgroup/systemd_scope.h"
#include "core/process.h"

namespace {

using nlohmann::json;
using namespace sealrun;
using namespace sealrun::resgroup;

int allocate(long mib) {
  const size_t chunk = 1 << 20;
  for (long i = 0; i < mib; ++i) {
    auto* p = static_cast<char*>(malloc(chunk));
    if (!p) return 2;
    memset(p, 0x5a, chunk);  // touch every page, so the memory is really charged
  }
  return 0;
}

int forkloop() {
  long forked = 0;
  int err = 0;
  for (;;) {
    pid_t pid = fork();
    if (pid == 0) {
      // Hold no stream open: the helper reads the job's output after it exits.
      close(0);
      close(1);
      close(2);
      for (;;) pause();
    }
    if (pid < 0) {
      err = errno;
      break;
    }
    if (++forked > 100000) break;
  }
  std::printf("{\"forked\": %ld, \"errno\": %d}\n", forked, err);
  std::fflush(stdout);
  return 0;
}

// Ignores SIGTERM, and leaves an orphan that called setsid after a double fork and ignores SIGTERM
// too: what a stop must still end (the KILL after the grace, reaching every process in the group).
int stubborn() {
  signal(SIGTERM, SIG_IGN);  // inherited by the children
  pid_t first = fork();
  if (first == 0) {
    setsid();
    if (fork() == 0) {
      close(0);
      close(1);
      close(2);
      for (;;) pause();
    }
    _exit(0);
  }
  if (first < 0) return 3;
  waitpid(first, nullptr, 0);
  std::printf("{\"stubborn\": true}\n");
  std::fflush(stdout);
  for (;;) pause();
}

json to_json(const Error& e) { return json{{"error", e.message()}}; }

int run(int argc, char** argv) {
  std::map<std::string, std::string> opt;
  std::vector<std::string> job;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") {
      job.assign(argv + i + 1, argv + argc);
      break;
    }
    if (a.rfind("--", 0) == 0 && i + 1 < argc) opt[a.substr(2)] = argv[++i];
  }
  SystemdTarget target{opt["bus"], opt["cgroupfs"]};
  GroupLimits limits;
  limits.memory_max_bytes = std::stoull(opt["memory-max"]);
  limits.memory_high_bytes = std::stoull(opt["memory-high"]);
  limits.swap_max_bytes = std::stoull(opt["swap-max"]);
  limits.pids_max = std::stoull(opt["pids-max"]);
  json out;

  BackendProbe probe = probe_systemd(target);
  out["probe"] = {{"available", probe.available},   {"why", probe.why},
                  {"memory_max", probe.memory_max}, {"memory_high", probe.memory_high},
                  {"swap_max", probe.swap_max},     {"pids_max", probe.pids_max}};
  auto group = create_systemd_group(opt["run-id"], limits, target);
  if (!group.ok()) {
    out["create"] = to_json(group.error());
    std::cout << out.dump() << "\n";
    return 1;
  }
  out["locators"] = (*group)->locators();
  out["join_fds"] = (*group)->join_fds().size();

  // The job's stdout goes to a memfd, read once it has exited.
  int memfd = memfd_create("job-stdout", MFD_CLOEXEC);
  SpawnOptions so;
  so.argv = job;
  so.stdout_fd = memfd;
  so.hold_until_release = true;
  auto child = spawn(so);
  if (!child.ok()) {
    out["spawn"] = to_json(child.error());
    std::cout << out.dump() << "\n";
    return 1;
  }
  auto adopted = (*group)->adopt(child->pid());
  out["adopt"] = adopted.ok() ? json("ok") : to_json(adopted.error());
  auto readback = (*group)->read_back();
  if (readback.ok()) {
    for (const auto& r : *readback) {
      out["read_back"][r.name] = {{"requested", r.requested},
                                  {"observed", r.observed ? json(*r.observed) : json()},
                                  {"applied", r.applied},
                                  {"note", r.note}};
    }
  } else {
    out["read_back"] = to_json(readback.error());
  }
  if (adopted.ok()) {
    auto released = child->release();
    out["release"] = released.ok() ? json("ok") : to_json(released.error());
    // The controller's wall-clock limit, in short: a job still running then is stopped anyway.
    int64_t wait_ms = opt.count("job-wait-ms") ? std::stoll(opt["job-wait-ms"]) : 120000;
    auto status = child->wait_for(wait_ms);
    if (status.ok() && status->has_value()) {
      out["job"] = {{"exit", (*status)->code}, {"signal", (*status)->signal}};
    } else {
      out["job"] = {{"running", true}};
    }
  }
  auto mem = (*group)->memory_report();
  if (mem.ok()) {
    out["memory"] = {{"peak", mem->peak_bytes ? json(*mem->peak_bytes) : json()},
                     {"events_max", mem->events_max},
                     {"events_oom", mem->events_oom},
                     {"events_oom_kill", mem->events_oom_kill}};
  } else {
    out["memory"] = to_json(mem.error());
  }
  auto stopped = (*group)->stop(std::stoll(opt["grace-ms"]));
  if (stopped.ok()) {
    out["stop"] = {{"confirmed", stopped->confirmed},
                   {"processes_signalled", stopped->processes_signalled},
                   {"actions", stopped->actions}};
  } else {
    out["stop"] = to_json(stopped.error());
  }
  if (child->running()) {
    auto status = child->wait_for(10000);
    if (status.ok() && status->has_value()) {
      out["job_after_stop"] = {{"exit", (*status)->code}, {"signal", (*status)->signal}};
    } else {
      out["job_after_stop"] = {{"running", true}};
    }
  }
  auto removed = (*group)->remove();
  out["remove"] = removed.ok() ? json("ok") : to_json(removed.error());
  auto after = (*group)->memory_report();  // the figures must survive the scope
  out["memory_after_stop_oom_kill"] = after.ok() ? json(after->events_oom_kill) : json();
  child->kill_and_reap();

  std::string job_out(4096, '\0');
  ssize_t n = pread(memfd, job_out.data(), job_out.size(), 0);
  job_out.resize(n > 0 ? static_cast<size_t>(n) : 0);
  out["job_stdout"] = job_out;
  std::cout << out.dump() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "allocate" && argc > 2) return allocate(std::atol(argv[2]));
  if (mode == "forkloop") return forkloop();
  if (mode == "stubborn") return stubborn();
  if (mode == "run") return run(argc, argv);
  std::fprintf(
      stderr, "usage: systemd_job_helper allocate MIB | forkloop | stubborn | run ... -- JOB...\n");
  return 2;
}
