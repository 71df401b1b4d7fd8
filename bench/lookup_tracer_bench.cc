// SPDX-License-Identifier: Apache-2.0
// The learning tracer's own cost (bench/README.md, "Learning's lookup tracer and the proving run"):
// COMMAND runs under the job's seccomp policy four times, alternately without and with the
// learning traces and a LookupTracer attached, no sandbox; each run's wall time, the tracer's
// stops and the distinct paths it kept are printed. The peer is the same command untraced.
//   lookup_tracer_bench 'cd /tmp/zlib && ./configure --static'   (as root: ptrace)
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "containment/seccomp_policy.h"
#include "learn/lookup_syscalls.h"
#include "learn/lookup_tracer.h"

using namespace sealrun;
using namespace sealrun::learn;

namespace {

// One run of `cmd`: wall milliseconds, or -1 after saying why on stderr.
long long timed_run(const char* cmd, bool traced) {
  SeccompPolicy policy = job_seccomp_policy();
  if (traced) policy.traces = traced_syscalls(TraceSet::kLearning);
  auto bpf = compile_seccomp_bpf(policy);
  if (!bpf.ok()) {
    std::fprintf(stderr, "seccomp: %s\n", bpf.error().message().c_str());
    return -1;
  }
  struct sock_fprog prog = {static_cast<unsigned short>(bpf->size() / sizeof(struct sock_filter)),
                            reinterpret_cast<struct sock_filter*>(bpf->data())};
  const char* argv[] = {"/bin/sh", "-c", cmd, nullptr};
  int gate[2];
  if (::pipe2(gate, O_CLOEXEC) != 0) return -1;
  auto tracer = LookupTracer::create({{"/usr", "/etc"}, {}, 1000000});
  auto t0 = std::chrono::steady_clock::now();
  pid_t child = ::fork();
  if (child == 0) {
    char b;
    if (::read(gate[0], &b, 1) != 1) ::_exit(120);
    ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
    ::execve(argv[0], const_cast<char**>(argv), environ);
    ::_exit(123);
  }
  ::close(gate[0]);
  if (traced && !tracer->attach(child).ok()) {
    std::fprintf(stderr, "could not attach the tracer (root is needed)\n");
    ::kill(child, SIGKILL);
  }
  if (::write(gate[1], "x", 1) != 1) return -1;
  ::close(gate[1]);
  ObservedLookups seen;
  int status = 0;
  if (traced)
    seen = tracer->finish();
  else
    ::waitpid(child, &status, 0);
  long long ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  std::printf("%s: %lld ms, %llu stops, %zu paths\n", traced ? "traced" : "untraced", ms,
              static_cast<unsigned long long>(seen.stops),
              seen.followed.size() + seen.unfollowed.size());
  return ms;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: lookup_tracer_bench COMMAND  (as root)\n");
    return 2;
  }
  for (bool traced : {false, true, false, true})
    if (timed_run(argv[1], traced) < 0) return 1;
  return 0;
}
