// SPDX-License-Identifier: Apache-2.0
// A real Buildbot 3.7 (Debian's buildbot and buildbot-worker) with the shipped
// contrib/ci/buildbot/master.cfg for the ci tests: master, worker, `buildbot sendchange` and
// whatever looks at the web UI (headless Chromium, a plain HTTP client) all run in a network
// namespace of the test's own with only lo up (entered with nsenter), so the default ports serve
// and nothing of the host's network is reachable or disturbed. The master's database is read from
// its file (buildbot_builds.py); waiting is on conditions, never a fixed sleep.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tests/controller/run_test_support.h"

namespace sealrun::testing {

// Buildbot's result codes (buildbot.process.results).
inline constexpr int kBuildSuccess = 0;
inline constexpr int kBuildException = 4;

class Buildbot : public RunTest {
 protected:
  void SetUp() override;
  void TearDown() override;

  // argv run inside the test's network namespace.
  std::vector<std::string> in_net(const std::vector<std::string>& argv) const;
  Captured tool(const std::vector<std::string>& argv);
  void start_master_and_worker();
  void send_change(const Frozen& admission, const std::string& revision);
  nlohmann::json finished_builds();
  // Waits for build `number` to finish and returns what the database says of it.
  nlohmann::json wait_for_build(int number);
  // Where the master keeps build `build`'s artifacts (receipts/sealrun/<id>/).
  std::string kept_dir(const nlohmann::json& build) const;
  nlohmann::json kept_receipt(const nlohmann::json& build);

  std::string master_, worker_, bb_state_;
  std::vector<std::string> env_, master_env_;
  std::optional<Child> net_holder_, master_proc_, worker_proc_;
  std::string netns_;  // /proc/<holder>/ns/net
};

// The result code of the step named `name` (-1 unfinished, -2 no such step).
int step_result(const nlohmann::json& build, const std::string& name);

}  // namespace sealrun::testing
