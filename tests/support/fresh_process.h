// SPDX-License-Identifier: Apache-2.0
// For tests of what a process has mapped before anything asked for it (a library sealrun loads on
// first use): the running test starts this test binary again with only itself selected, in a
// fresh process, and passes when that copy does. Header-only: it needs GoogleTest, which
// sealrun_testsupport does not link.
#pragma once

#include <gtest/gtest.h>
#include <link.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace sealrun::testing {

// Whether this process is the fresh copy (the environment variable `marker` is set in it).
inline bool in_fresh_process(const char* marker) { return std::getenv(marker) != nullptr; }

// Runs the current test again in a fresh process with `marker` set, and expects it to pass (its
// output is the test's output).
inline void rerun_current_test_in_fresh_process(const char* marker) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string filter =
      std::string("--gtest_filter=") + info->test_suite_name() + "." + info->name();
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setenv(marker, "1", 1);
    execl("/proc/self/exe", "fresh", filter.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the fresh process's checks failed (its output is above)";
}

// How many objects mapped in this process have `name_part` in their path ("libcrypto.so").
inline int mapped_objects_named(const char* name_part) {
  struct Count {
    const char* part;
    int n = 0;
  } count{name_part};
  dl_iterate_phdr(
      [](struct dl_phdr_info* info, size_t, void* data) {
        auto* c = static_cast<Count*>(data);
        if (info->dlpi_name && std::strstr(info->dlpi_name, c->part)) ++c->n;
        return 0;
      },
      &count);
  return count.n;
}

}  // namespace sealrun::testing
