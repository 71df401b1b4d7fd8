// SPDX-License-Identifier: Apache-2.0
// run_unprivileged(): a test's piece of code run as nobody, for what root would see differently
// (a file at mode 000, a directory it may not search).
#pragma once

#include <fcntl.h>
#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>

namespace sealrun::testing {

// Runs fn() in a child process as uid/gid 65534 (nobody) when we are root, as ourselves otherwise,
// and returns what it returned (or "child failed: ..."). The child starts no test framework
// machinery and leaves by _exit.
inline std::string run_unprivileged(const std::function<std::string()>& fn) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return "child failed: pipe";
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(p[0]);
    if (::geteuid() == 0 &&
        (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 ||
         ::setresuid(65534, 65534, 65534) != 0))
      ::_exit(3);
    std::string out = fn();
    (void)!::write(p[1], out.data(), out.size());
    ::_exit(0);
  }
  ::close(p[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(p[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(p[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return "child failed: status " + std::to_string(status);
  return out;
}

}  // namespace sealrun::testing
