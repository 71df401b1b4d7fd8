// SPDX-License-Identifier: Apache-2.0
// Overlapping runs never fail each other's cleanup (issue 29 item 2): eight runs at once in two
// state directories, bwrap and podman mixed, half of them failing, each with its owned file system
// and its result space. Every run exits as its job did (0 or 5, never 7 because another run was
// active), no cleanup step found its file system still mounted in another run's namespace (the
// owned file systems live in the controller's private mount namespace: private_ns.h), and nothing
// is left: no mount under either state directory, no loop device bound to one of their images, no
// grant record, nothing for `sweep` to do.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <future>

#include "tests/controller/run_test_support.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class Overlap : public RunTest {
 protected:
  void SetUp() override {
    RunTest::SetUp();
    if (::geteuid() != 0) GTEST_SKIP() << "a file system of the run's own needs root";
  }
};

// Loop devices whose backing file lies under `dir` ("... (deleted)" included).
std::vector<std::string> loops_backed_under(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator("/sys/block")) {
    std::string name = e.path().filename();
    if (name.rfind("loop", 0) != 0) continue;
    std::string backing = read_text(e.path() / "loop/backing_file");
    if (backing.find(dir) != std::string::npos) out.push_back(name + ": " + backing);
  }
  return out;
}

TEST_F(Overlap, EightRunsInTwoStateDirsEndAsTheirJobsAndLeaveNothing) {
  const std::string state2 = dir_ / "state2";
  struct Kind {
    std::string mechanism;
    bool fails;
    Frozen admission;
  };
  // A failing job ends at once, while the others (started around it) still run: its file systems
  // are released while other runs' namespaces exist.
  std::vector<Kind> kinds;
  for (const std::string mechanism : {"bwrap", "podman"})
    for (bool fails : {true, false}) {
      std::string script = fails ? "echo failing >&2; exit 3" : "sleep 3; echo made >/out/made";
      std::string name = mechanism + (fails ? "-fail" : "-ok") + ".json";
      kinds.push_back({mechanism, fails, freeze_for(mechanism, script, name)});
    }
  struct Run {
    std::string id, state;
    const Kind* kind;
    std::future<Captured> done;
  };
  std::vector<Run> runs;
  for (int i = 0; i < 8; ++i) {
    // fail, ok, fail, ok...: each state directory and each mechanism gets both.
    const Kind& k = kinds[static_cast<size_t>((i / 2) % 2 * 2 + (i % 2 == 0 ? 0 : 1))];
    std::string state = (i / 4) % 2 == 0 ? state_ : state2;
    std::string id = "ov" + std::to_string(i) + "-" + k.mechanism;
    std::vector<std::string> args = {
        "run", k.admission.path, "--sha256", k.admission.sha256, "--id",
        id,    "--state-dir",    state,      "--mechanism",      k.mechanism};
    runs.push_back({id, state, &k, std::async(std::launch::async, [this, args] {
                      auto r = run_capture(sealrun_options(args), 180000);
                      return r.ok() ? *r : Captured{};
                    })});
    ::usleep(150 * 1000);
  }
  for (auto& r : runs) {
    Captured c = r.done.get();
    SCOPED_TRACE(r.id + " (" + r.kind->mechanism + (r.kind->fails ? ", failing)" : ")"));
    EXPECT_EQ(c.status.code, r.kind->fails ? 5 : 0) << c.err;
    auto text = read_text(r.state + "/results/" + r.id + "/receipt.json");
    json receipt = json::parse(text, nullptr, false);
    ASSERT_TRUE(receipt.is_object()) << c.err;
    EXPECT_EQ(receipt["owned_space"]["kind"], "filesystem") << receipt["owned_space"].dump();
    EXPECT_EQ(receipt["result_space"]["kind"], "filesystem") << receipt["result_space"].dump();
    for (const auto& step : receipt["cleanup"]) {
      EXPECT_EQ(step["result"], "ok") << step.dump();
      // What the release looked like before: another run's namespace held a copy of the mount.
      EXPECT_EQ(step.dump().find("another"), std::string::npos) << step.dump();
    }
    if (!r.kind->fails) {
      EXPECT_TRUE(fs::exists(r.state + "/results/" + r.id + "/out/made"));
    }
  }
  // Nothing is left, seen from the host's mount namespace.
  std::string mounts = read_text("/proc/self/mountinfo");
  EXPECT_EQ(mounts.find(dir_.str()), std::string::npos) << mounts;
  EXPECT_TRUE(loops_backed_under(dir_.str()).empty())
      << ::testing::PrintToString(loops_backed_under(dir_.str()));
  for (const std::string& state : {state_, state2}) {
    std::error_code ec;
    for (const char* sub : {"/grants", "/ownedfs"})
      for (const auto& e : fs::directory_iterator(state + sub, ec))
        EXPECT_TRUE(e.path().extension() != ".json" && e.path().extension() != ".img")
            << "left: " << e.path();  // records, images
    auto sweep = sealrun({"sweep", "--state-dir", state});
    EXPECT_EQ(sweep.status.code, 0) << sweep.err;
    EXPECT_NE(sweep.out.find("nothing left behind"), std::string::npos) << sweep.out << sweep.err;
  }
}

}  // namespace
}  // namespace sealrun::testing
