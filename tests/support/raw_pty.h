// SPDX-License-Identifier: Apache-2.0
// A pseudo-terminal in raw mode for the TIOCSTI tests (ACCEPTANCE 1): the slave stands in for the
// controller's terminal and is handed to a job; in raw mode a byte the job manages to inject sits
// in the slave's input queue (pending_input > 0) instead of being echoed or cooked away.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <pty.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <string>

#include "core/unique_fd.h"

namespace sealrun::testing {

struct RawPty {
  UniqueFd master;
  UniqueFd slave;
};

// Both ends CLOEXEC, so only what a test passes on explicitly reaches a child.
inline RawPty open_raw_pty() {
  int master = -1, slave = -1;
  EXPECT_EQ(::openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
  RawPty p{UniqueFd(master), UniqueFd(slave)};
  ::fcntl(master, F_SETFD, FD_CLOEXEC);
  ::fcntl(slave, F_SETFD, FD_CLOEXEC);
  struct termios t {};
  ::tcgetattr(slave, &t);
  ::cfmakeraw(&t);
  ::tcsetattr(slave, TCSANOW, &t);
  return p;
}

// What the job wrote to the terminal so far (non-blocking read of the master side).
inline std::string terminal_output(int master) {
  ::fcntl(master, F_SETFL, O_NONBLOCK);
  char buf[4096];
  ssize_t n = ::read(master, buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

// Bytes waiting in the terminal's input queue, or -1 if that cannot be read.
inline int pending_input(int slave) {
  int pending = -1;
  if (::ioctl(slave, FIONREAD, &pending) != 0) return -1;
  return pending;
}

}  // namespace sealrun::testing
