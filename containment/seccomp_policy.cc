// SPDX-License-Identifier: Apache-2.0
// The job's seccomp policy: built as a list of denials (data), compiled with libseccomp to classic
// BPF for bwrap, and rendered as an OCI JSON profile for podman. Nothing here installs a filter;
// the mechanisms do that as late as possible (bwrap --seccomp FD, podman --security-opt).
//
// Default allow, deny what a build never needs and what the known container escapes use: new
// namespaces (a user namespace hands the job a fresh set of capabilities over kernel code that was
// never meant for unprivileged users), mounts, setns, ptrace and cross-process memory access,
// the kernel keyring, bpf, perf, userfaultfd (a race-widening primitive), io_uring (its ops bypass
// seccomp entirely), terminal injection (TIOCSTI/TIOCLINUX), module loading, kexec, reboot, swap,
// and turning off ASLR through personality(2). The same rules cover the x86 (int 0x80) and x32
// ABIs, because a filter that only knows x86_64 numbers is bypassed by switching ABI.
#include "containment/seccomp_policy.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>

#include "core/syscall.h"

namespace sealrun {

namespace {

struct FilterDeleter {
  void operator()(void* ctx) const { seccomp_release(ctx); }
};
using FilterCtx = std::unique_ptr<void, FilterDeleter>;

// The ioctl request argument is declared `unsigned int cmd` in the kernel, but seccomp sees the
// whole 64-bit register. ioctl(fd, TIOCSTI | (1UL << 32), ...) reaches the kernel as plain TIOCSTI
// (the upper half is dropped when the argument is narrowed), so a filter that compared the full
// 64-bit value for equality would let it through (CVE-2019-10063 in flatpak). Comparing only the
// low 32 bits under a mask, as minijail and flatpak do, catches every spelling.
constexpr uint64_t kLow32 = 0xFFFFFFFFULL;

void deny(SeccompPolicy& p, std::string name, std::string why, int err = EPERM) {
  p.denials.push_back({std::move(name), err, {}, std::move(why)});
}

void deny_if(SeccompPolicy& p, std::string name, ArgMatch match, std::string why) {
  p.denials.push_back({std::move(name), EPERM, {match}, std::move(why)});
}

}  // namespace

SeccompPolicy job_seccomp_policy() {
  SeccompPolicy p;
  // Namespaces: unshare(2) and setns(2) outright; clone(2) only with a namespace flag (plain
  // clone is how fork and threads are made). One rule per flag: "any of these bits" cannot be said
  // with a single masked-equality compare.
  deny(p, "unshare", "new namespaces (user namespaces give a fresh capability set)");
  deny(p, "setns", "joining another namespace");
  const std::pair<uint64_t, const char*> ns_flags[] = {
      {CLONE_NEWUSER, "CLONE_NEWUSER"},     {CLONE_NEWNS, "CLONE_NEWNS"},
      {CLONE_NEWPID, "CLONE_NEWPID"},       {CLONE_NEWNET, "CLONE_NEWNET"},
      {CLONE_NEWUTS, "CLONE_NEWUTS"},       {CLONE_NEWIPC, "CLONE_NEWIPC"},
      {CLONE_NEWCGROUP, "CLONE_NEWCGROUP"},
  };
  // (CLONE_NEWTIME shares its bit with the exit-signal byte of clone(2); it only works through
  // unshare and clone3, both denied.)
  for (const auto& [flag, name] : ns_flags)
    deny_if(p, "clone", {0, flag, flag}, fmt::format("clone with {}", name));
  // clone3 passes its flags in a struct that seccomp cannot read, so it is refused as if the
  // kernel did not have it: ENOSYS makes glibc fall back to clone(2), which the rules above see.
  deny(p, "clone3", "flags are behind a pointer seccomp cannot inspect; ENOSYS -> libc uses clone",
       ENOSYS);

  for (const char* name : {"mount", "umount", "umount2", "pivot_root", "chroot", "move_mount",
                           "open_tree", "fsopen", "fsmount", "fsconfig", "fspick", "mount_setattr"})
    deny(p, name, "changing the mount table");
  for (const char* name :
       {"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp"})
    deny(p, name, "reading or steering another process (ptrace can stop the sandbox's PID 1)");
  for (const char* name : {"keyctl", "add_key", "request_key"})
    deny(p, name, "the kernel keyring is not namespaced");
  deny(p, "bpf", "eBPF programs and maps");
  deny(p, "perf_event_open", "perf events (kernel address and side-channel exposure)");
  deny(p, "userfaultfd", "userfaultfd widens kernel race windows for exploits");
  for (const char* name : {"io_uring_setup", "io_uring_enter", "io_uring_register"})
    deny(p, name, "io_uring operations are not subject to seccomp");
  deny_if(p, "ioctl", {1, kLow32, TIOCSTI}, "TIOCSTI pushes input into a terminal");
  deny_if(p, "ioctl", {1, kLow32, TIOCLINUX}, "TIOCLINUX can inject console input");
  for (const char* name : {"init_module", "finit_module", "delete_module"})
    deny(p, name, "kernel modules");
  for (const char* name : {"kexec_load", "kexec_file_load", "reboot"})
    deny(p, name, "replacing or stopping the kernel");
  for (const char* name : {"swapon", "swapoff"}) deny(p, name, "swap configuration");
  deny(p, "open_by_handle_at",
       "opening files by handle bypasses the mount view (the shocker escape)");
  deny(p, "acct", "process accounting");

  // personality(2) takes an unsigned int; 0xffffffff only queries. Deny any value with
  // ADDR_NO_RANDOMIZE set that is not the query. "Not 0xffffffff" = "some other bit is clear", and
  // libseccomp allows one compare per argument, so: one rule per other bit b, matching
  // (arg & (ADDR_NO_RANDOMIZE | 1<<b)) == ADDR_NO_RANDOMIZE.
  for (unsigned bit = 0; bit < 32; ++bit) {
    uint64_t b = 1ULL << bit;
    if (b == ADDR_NO_RANDOMIZE) continue;
    deny_if(p, "personality", {0, ADDR_NO_RANDOMIZE | b, ADDR_NO_RANDOMIZE},
            "personality(ADDR_NO_RANDOMIZE) turns off ASLR");
  }
  return p;
}

namespace {

// Everything of a policy the compiled program depends on, as one string: the memo's key.
std::string policy_key(const SeccompPolicy& policy) {
  std::string key = policy.include_compat_arches ? "compat\n" : "native\n";
  auto add_args = [&](const std::vector<ArgMatch>& args) {
    for (const auto& a : args) key += fmt::format(" {}:{:x}:{:x}", a.index, a.mask, a.value);
    key += '\n';
  };
  for (const auto& d : policy.denials) {
    key += fmt::format("deny {} {}", d.name, d.errno_value);
    add_args(d.args);
  }
  for (const auto& t : policy.traces) {
    key += fmt::format("trace {} {}", t.name, t.data);
    add_args(t.args);
  }
  return key;
}

Result<std::string> compile_uncached(const SeccompPolicy& policy);

}  // namespace

// A run compiles the job's policy twice (the bwrap probe cache's key, then the job's program) and
// libseccomp takes about a millisecond each time: the program of the last policy compiled is kept
// for this process. The same rules give the same program, so nothing is skipped.
Result<std::string> compile_seccomp_bpf(const SeccompPolicy& policy) {
  static std::mutex mu;
  static std::string last_key, last_bpf;
  std::string key = policy_key(policy);
  {
    std::lock_guard<std::mutex> hold(mu);
    if (!last_key.empty() && key == last_key) return last_bpf;
  }
  std::string bpf = SEALRUN_TRY(compile_uncached(policy));
  std::lock_guard<std::mutex> hold(mu);
  last_key = std::move(key);
  last_bpf = bpf;
  return bpf;
}

namespace {

Result<std::string> compile_uncached(const SeccompPolicy& policy) {
  FilterCtx ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) return Error::make("seccomp_init failed (out of memory?)");
  if (policy.include_compat_arches && seccomp_arch_native() == SCMP_ARCH_X86_64) {
    for (uint32_t arch : {SCMP_ARCH_X86, SCMP_ARCH_X32}) {
      int rc = seccomp_arch_add(ctx.get(), arch);
      if (rc != 0 && rc != -EEXIST)
        return Error::with_errno(-rc, fmt::format("seccomp_arch_add {:#x}", arch));
    }
  }
  for (const auto& d : policy.denials) {
    int nr = seccomp_syscall_resolve_name(d.name.c_str());
    if (nr == __NR_SCMP_ERROR)
      return Error::make(fmt::format("seccomp policy names unknown system call \"{}\"", d.name));
    std::vector<scmp_arg_cmp> cmps;
    for (const auto& a : d.args) {
      if (a.index > 5)
        return Error::make(
            fmt::format("seccomp rule for {}: argument index {} > 5", d.name, a.index));
      cmps.push_back(scmp_arg_cmp{a.index, SCMP_CMP_MASKED_EQ, a.mask, a.value});
    }
    int rc = seccomp_rule_add_array(ctx.get(), SCMP_ACT_ERRNO(static_cast<uint16_t>(d.errno_value)),
                                    nr, static_cast<unsigned>(cmps.size()), cmps.data());
    // -EOPNOTSUPP/-EDOM: libseccomp cannot express this rule for one of the ABIs; that would leave
    // a hole, so it is an error rather than a skipped rule.
    if (rc != 0)
      return Error::with_errno(-rc, fmt::format("seccomp rule for {} (\"{}\")", d.name, d.why));
  }
  for (const auto& t : policy.traces) {
    int nr = seccomp_syscall_resolve_name(t.name.c_str());
    if (nr == __NR_SCMP_ERROR)
      return Error::make(fmt::format("seccomp policy traces unknown system call \"{}\"", t.name));
    std::vector<scmp_arg_cmp> cmps;
    for (const auto& a : t.args) {
      if (a.index > 5)
        return Error::make(
            fmt::format("seccomp trace of {}: argument index {} > 5", t.name, a.index));
      cmps.push_back(scmp_arg_cmp{a.index, SCMP_CMP_MASKED_EQ, a.mask, a.value});
    }
    int rc = seccomp_rule_add_array(ctx.get(), SCMP_ACT_TRACE(t.data), nr,
                                    static_cast<unsigned>(cmps.size()), cmps.data());
    if (rc != 0) return Error::with_errno(-rc, fmt::format("seccomp trace of {}", t.name));
  }
  auto mem = ::memfd_create("sealrun-seccomp", MFD_CLOEXEC);
  if (mem < 0) return Error::from_errno("memfd_create for the seccomp program");
  UniqueFd fd(mem);
  int rc = seccomp_export_bpf(ctx.get(), fd.get());
  if (rc != 0) return Error::with_errno(-rc, "seccomp_export_bpf");
  if (::lseek(fd.get(), 0, SEEK_SET) != 0) return Error::from_errno("lseek seccomp memfd");
  return read_up_to(fd.get(), 1 << 20, "seccomp program");
}

}  // namespace

Result<UniqueFd> seccomp_program_fd(const std::string& bpf) {
  int mem = ::memfd_create("sealrun-seccomp", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (mem < 0) return Error::from_errno("memfd_create for the seccomp program");
  UniqueFd fd(mem);
  SEALRUN_TRY(write_all(fd.get(), bpf, "seccomp memfd"));
  // Sealed: nobody holding a copy of the descriptor can change the filter before bwrap reads it.
  if (::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) != 0)
    return Error::from_errno("seal seccomp memfd");
  if (::lseek(fd.get(), 0, SEEK_SET) != 0) return Error::from_errno("lseek seccomp memfd");
  return fd;
}

std::string seccomp_policy_oci_json(const SeccompPolicy& policy) {
  nlohmann::json doc;
  doc["defaultAction"] = "SCMP_ACT_ALLOW";
  auto arches = nlohmann::json::array({"SCMP_ARCH_X86_64"});
  if (policy.include_compat_arches) {
    arches.push_back("SCMP_ARCH_X86");
    arches.push_back("SCMP_ARCH_X32");
  }
  doc["architectures"] = arches;
  auto syscalls = nlohmann::json::array();
  for (const auto& d : policy.denials) {
    nlohmann::json rule;
    rule["names"] = nlohmann::json::array({d.name});
    rule["action"] = "SCMP_ACT_ERRNO";
    rule["errnoRet"] = d.errno_value;
    auto args = nlohmann::json::array();
    // OCI (runc, libseccomp-golang): for SCMP_CMP_MASKED_EQ, `value` is the mask and `valueTwo`
    // the value the masked argument must equal.
    for (const auto& a : d.args)
      args.push_back({{"index", a.index},
                      {"value", a.mask},
                      {"valueTwo", a.value},
                      {"op", "SCMP_CMP_MASKED_EQ"}});
    if (!args.empty()) rule["args"] = args;
    rule["comment"] = d.why;
    syscalls.push_back(rule);
  }
  doc["syscalls"] = syscalls;
  return doc.dump(2);
}

}  // namespace sealrun
