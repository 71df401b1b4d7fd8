// SPDX-License-Identifier: Apache-2.0
// The shared fixture of the `admit freeze --learn` integration tests: root only (fanotify and
// ptrace), the built binary run over RunTest's source and toolchain with the job's PATH and a
// bounded wall clock, and the learned admission read back as JSON.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/controller/run_test_support.h"

namespace sealrun::testing {

class LearnRunTest : public RunTest {
 public:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "--learn needs root (fanotify, ptrace); CI runs as root";
    RunTest::SetUp();
  }

  // `admit freeze --learn --json` of `/bin/sh -c script` into `name`, `extra` before --learn.
  Captured learn(const std::string& script, const std::string& name,
                 const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"admit",
                                     "freeze",
                                     "--out",
                                     dir_ / name,
                                     "--source",
                                     src_,
                                     "--toolchain",
                                     toolchain_,
                                     "--toolchain-mount",
                                     "/opt/toolchain",
                                     "--env",
                                     "PATH=/usr/bin:/bin",
                                     "--set",
                                     "limits.wall_clock_s=120",
                                     "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"--learn", "--", "/bin/sh", "-c", script});
    return sealrun(args, std::nullopt, 300000);
  }

  static nlohmann::json read_json(const std::string& path) {
    std::ifstream in(path);
    return nlohmann::json::parse(in);
  }
};

}  // namespace sealrun::testing
