// SPDX-License-Identifier: Apache-2.0
// The job's system-call policy as plain data (minijail style): built once, unit-tested as data and
// as compiled BPF, installed only by the mechanism (bwrap --seccomp FD, podman --security-opt
// seccomp=FILE). Default allow; each rule denies one system call, optionally only when an argument
// matches under a mask (e.g. clone with CLONE_NEWUSER, ioctl TIOCSTI on the full 64-bit value).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/unique_fd.h"

namespace sealrun {

struct ArgMatch {
  unsigned index = 0;  // argument number, 0-based
  uint64_t mask = ~0ULL;
  uint64_t value = 0;  // deny when (arg & mask) == value
};

struct SyscallDenial {
  std::string name;            // libseccomp spelling, e.g. "io_uring_setup"
  int errno_value = 1;         // EPERM unless the rule says otherwise (ENOSYS for clone3)
  std::vector<ArgMatch> args;  // all must match; empty: always deny
  std::string why;             // one line for docs and probe output
};

// A system call that stops the job for its tracer (SCMP_ACT_TRACE(data)) instead of running
// straight on: only for a job that has a ptrace tracer attached from its first instruction (a
// learning or proving run, learn/lookup_tracer.h). Without a tracer the kernel fails a traced call
// with ENOSYS, so a policy with traces must never reach a job without one.
struct SyscallTrace {
  std::string name;            // libseccomp spelling; a name the native ABI lacks (stat64) is
                               // traced in the ABIs that have it
  uint16_t data = 0;           // SECCOMP_RET_DATA: tells the tracer which call (any ABI) it is
  std::vector<ArgMatch> args;  // all must match; empty: always trace
};

struct SeccompPolicy {
  std::vector<SyscallDenial> denials;
  std::vector<SyscallTrace> traces;  // empty for every ordinary run
  // Also cover the 32-bit ABIs (x86, x32) so a job cannot switch ABI to escape the filter.
  bool include_compat_arches = true;
};

// The policy every job runs under.
SeccompPolicy job_seccomp_policy();
// Compiles to classic BPF with libseccomp (seccomp_export_bpf), for bwrap --seccomp.
Result<std::string> compile_seccomp_bpf(const SeccompPolicy& policy);
// The compiled program in a sealed memfd (offset 0), ready to pass to bwrap as --seccomp FD.
Result<UniqueFd> seccomp_program_fd(const std::string& bpf);
// The same policy as an OCI/podman JSON seccomp profile (denials only: podman jobs are never
// traced).
std::string seccomp_policy_oci_json(const SeccompPolicy& policy);

}  // namespace sealrun
