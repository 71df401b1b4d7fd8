// SPDX-License-Identifier: Apache-2.0
// The seccomp policy as data (every required denial is there, masked compares are right), as
// compiled BPF (non-empty, whole instructions, covers the compat ABIs), as OCI JSON, and loaded for
// real in a forked child (PR_SET_NO_NEW_PRIVS + seccomp(2)) to check what it denies and what it
// still allows.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <set>

#include "containment/seccomp_policy.h"

namespace sealrun {
namespace {

std::set<std::string> denied_names(const SeccompPolicy& p) {
  std::set<std::string> out;
  for (const auto& d : p.denials) out.insert(d.name);
  return out;
}

TEST(SeccompPolicy, DeniesEveryRequiredSystemCall) {
  auto names = denied_names(job_seccomp_policy());
  for (const char* required : {"unshare",
                               "clone",
                               "clone3",
                               "mount",
                               "umount2",
                               "pivot_root",
                               "move_mount",
                               "open_tree",
                               "fsopen",
                               "fsmount",
                               "fsconfig",
                               "mount_setattr",
                               "setns",
                               "ptrace",
                               "process_vm_readv",
                               "process_vm_writev",
                               "keyctl",
                               "add_key",
                               "request_key",
                               "bpf",
                               "perf_event_open",
                               "userfaultfd",
                               "io_uring_setup",
                               "io_uring_enter",
                               "io_uring_register",
                               "ioctl",
                               "init_module",
                               "finit_module",
                               "delete_module",
                               "kexec_load",
                               "kexec_file_load",
                               "reboot",
                               "swapon",
                               "swapoff",
                               "personality"})
    EXPECT_TRUE(names.count(required)) << required << " is not denied";
}

TEST(SeccompPolicy, RuleShapes) {
  auto p = job_seccomp_policy();
  bool tiocsti = false, tioclinux = false, newuser = false;
  for (const auto& d : p.denials) {
    if (d.name == "clone3") {
      EXPECT_EQ(d.errno_value, ENOSYS);
    }
    if (d.name == "unshare") {
      EXPECT_TRUE(d.args.empty());
    }
    if (d.name == "ioctl") {
      ASSERT_EQ(d.args.size(), 1u);
      EXPECT_EQ(d.args[0].index, 1u);
      // Only the low 32 bits: the kernel narrows `cmd` to unsigned int.
      EXPECT_EQ(d.args[0].mask, 0xFFFFFFFFULL);
      tiocsti |= d.args[0].value == TIOCSTI;
      tioclinux |= d.args[0].value == TIOCLINUX;
    }
    if (d.name == "clone") {
      ASSERT_EQ(d.args.size(), 1u);
      EXPECT_EQ(d.args[0].mask, d.args[0].value) << "clone rules test one flag bit each";
      newuser |= d.args[0].mask == CLONE_NEWUSER;
    }
    EXPECT_FALSE(d.why.empty()) << d.name;
  }
  EXPECT_TRUE(tiocsti && tioclinux && newuser);
  EXPECT_TRUE(p.include_compat_arches);
}

TEST(SeccompPolicy, CompilesToWholeBpfInstructions) {
  auto bpf = compile_seccomp_bpf(job_seccomp_policy());
  ASSERT_TRUE(bpf.ok()) << bpf.error().message();
  ASSERT_FALSE(bpf->empty());
  EXPECT_EQ(bpf->size() % sizeof(sock_filter), 0u);
  // Three ABIs with ~90 rules each: far more than a trivial allow-all program.
  EXPECT_GT(bpf->size() / sizeof(sock_filter), 200u);
  // Without the compat ABIs the program is smaller: the x86/x32 sections are really there.
  SeccompPolicy native = job_seccomp_policy();
  native.include_compat_arches = false;
  auto small = compile_seccomp_bpf(native);
  ASSERT_TRUE(small.ok());
  EXPECT_LT(small->size(), bpf->size());
}

TEST(SeccompPolicy, UnknownSystemCallNameIsAnError) {
  SeccompPolicy p;
  p.denials.push_back({"no_such_syscall", 1, {}, "test"});
  auto bpf = compile_seccomp_bpf(p);
  ASSERT_FALSE(bpf.ok());
  EXPECT_NE(bpf.error().message().find("no_such_syscall"), std::string::npos);
}

TEST(SeccompPolicy, OciJsonProfile) {
  auto doc = nlohmann::json::parse(seccomp_policy_oci_json(job_seccomp_policy()));
  EXPECT_EQ(doc["defaultAction"], "SCMP_ACT_ALLOW");
  EXPECT_EQ(doc["architectures"],
            nlohmann::json::array({"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"}));
  bool saw_tiocsti = false;
  for (const auto& rule : doc["syscalls"]) {
    EXPECT_EQ(rule["action"], "SCMP_ACT_ERRNO");
    EXPECT_TRUE(rule["errnoRet"].is_number_integer());
    if (rule["names"][0] == "ioctl" && rule["args"][0]["valueTwo"] == TIOCSTI) {
      saw_tiocsti = true;
      EXPECT_EQ(rule["args"][0]["index"], 1);
      EXPECT_EQ(rule["args"][0]["value"], 0xFFFFFFFFULL);  // OCI: value = mask
      EXPECT_EQ(rule["args"][0]["op"], "SCMP_CMP_MASKED_EQ");
    }
  }
  EXPECT_TRUE(saw_tiocsti);
}

// Runs `body` in a forked child under the compiled policy; the child's exit code is 0 when every
// expectation held, else the number of the first failed check.
int run_filtered(const std::string& bpf, int (*body)()) {
  pid_t pid = ::fork();
  if (pid == 0) {
    sock_fprog prog{static_cast<unsigned short>(bpf.size() / sizeof(sock_filter)),
                    reinterpret_cast<sock_filter*>(const_cast<char*>(bpf.data()))};
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) ::_exit(100);
    if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) ::_exit(101);
    ::_exit(body());
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 200 + WTERMSIG(status);
}

int denied_checks() {
  errno = 0;
  if (::unshare(CLONE_NEWUSER) != -1 || errno != EPERM) return 1;
  if (::unshare(CLONE_NEWNS) != -1 || errno != EPERM) return 2;
  if (::syscall(SYS_clone3, nullptr, 0) != -1 || errno != ENOSYS) return 3;
  // clone(CLONE_NEWUSER) through the raw system call (flags in arg 0 on x86_64).
  if (::syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0) != -1 || errno != EPERM) return 4;
  if (::syscall(SYS_setns, 0, 0) != -1 || errno != EPERM) return 5;
  if (::syscall(SYS_keyctl, 0, 0, 0, 0, 0) != -1 || errno != EPERM) return 6;
  if (::syscall(SYS_io_uring_setup, 1, nullptr) != -1 || errno != EPERM) return 7;
  if (::syscall(SYS_bpf, 0, nullptr, 0) != -1 || errno != EPERM) return 8;
  // TIOCSTI with junk in the upper 32 bits: still caught (masked compare).
  int fd = ::open("/dev/null", O_RDONLY);
  char c = 'x';
  if (::syscall(SYS_ioctl, fd, TIOCSTI | (1ULL << 32), &c) != -1 || errno != EPERM) return 9;
  if (::syscall(SYS_ioctl, fd, TIOCSTI, &c) != -1 || errno != EPERM) return 10;
  if (::personality(ADDR_NO_RANDOMIZE) != -1 || errno != EPERM) return 11;
  if (::syscall(SYS_ptrace, 16 /*PTRACE_ATTACH*/, 1, 0, 0) != -1 || errno != EPERM) return 12;
  if (::syscall(SYS_userfaultfd, 0) != -1 || errno != EPERM) return 13;
  // The same denial through the 32-bit ABIs: unshare is 310 on i386 (int 0x80) and 272 on x32
  // (x86_64 instruction, bit 30 set in the number). Without the compat sections these would pass.
  long ret = 0;
  asm volatile("int $0x80"
               : "=a"(ret)
               : "a"(310L), "b"(static_cast<long>(CLONE_NEWUSER))
               : "memory");
  if (ret != -EPERM) return 14;
  if (::syscall(0x40000000L | 272, CLONE_NEWUSER) != -1 || errno != EPERM) return 15;
  return 0;
}

int allowed_checks() {
  // Plain fork (clone without namespace flags) works.
  pid_t pid = ::fork();
  if (pid < 0) return 1;
  if (pid == 0) ::_exit(7);
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || WEXITSTATUS(status) != 7) return 2;
  // The personality query (0xffffffff) still answers.
  if (::personality(0xffffffff) == -1) return 3;
  // Other ioctls are untouched: FIONREAD on a pipe.
  int p[2];
  if (::pipe(p) != 0) return 4;
  int n = -1;
  if (::ioctl(p[0], FIONREAD, &n) != 0 || n != 0) return 5;
  return 0;
}

TEST(SeccompPolicy, LoadedFilterDeniesWhatItSays) {
  auto bpf = compile_seccomp_bpf(job_seccomp_policy());
  ASSERT_TRUE(bpf.ok());
  EXPECT_EQ(run_filtered(*bpf, denied_checks), 0);
}

TEST(SeccompPolicy, LoadedFilterLeavesOrdinaryWorkAlone) {
  auto bpf = compile_seccomp_bpf(job_seccomp_policy());
  ASSERT_TRUE(bpf.ok());
  EXPECT_EQ(run_filtered(*bpf, allowed_checks), 0);
}

TEST(SeccompPolicy, ProgramFdIsSealedAndRewound) {
  auto bpf = compile_seccomp_bpf(job_seccomp_policy());
  ASSERT_TRUE(bpf.ok());
  auto fd = seccomp_program_fd(*bpf);
  ASSERT_TRUE(fd.ok());
  EXPECT_EQ(::write(fd->get(), "x", 1), -1);  // F_SEAL_WRITE
  std::string back(bpf->size(), '\0');
  EXPECT_EQ(::read(fd->get(), back.data(), back.size()), static_cast<ssize_t>(bpf->size()));
  EXPECT_EQ(back, *bpf);
}

}  // namespace
}  // namespace sealrun
