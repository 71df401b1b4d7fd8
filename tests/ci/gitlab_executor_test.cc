// SPDX-License-Identifier: Apache-2.0
// The GitLab custom executor (contrib/ci/gitlab/custom-executor/, label ci), driven the way GitLab
// Runner's custom executor protocol calls it (config, prepare, run per stage, cleanup;
// CUSTOM_ENV_* variables; BUILD_FAILURE_EXIT_CODE and SYSTEM_FAILURE_EXIT_CODE) against the real
// sealrun: the documented protocol, not GitLab Runner itself, which cannot run here. Checked: the
// exit codes map onto GitLab's; the artifacts alone (sealrun-receipt/ in the project directory)
// verify with the signer's key and rebuild elsewhere; every stage passes the configured state
// directory; and cleanup's sweep leaves a resource group no record of that directory names.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "containment/resgroup/resource_group.h"
#include "tests/controller/run_test_support.h"
#include "tests/support/temp_dir.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;

const std::string kExecutor =
    std::string(SEALRUN_SOURCE_DIR) + "/contrib/ci/gitlab/custom-executor";

class GitlabExecutor : public RunTest {
 protected:
  void SetUp() override {
    RunTest::SetUp();
    fs::create_directories(dir_ / "project");
    ci_state_ = dir_ / "ci/state";
  }
  // The environment GitLab Runner gives the executor's scripts for job `job_id`.
  std::vector<std::string> env(int job_id, const Frozen& admission) {
    return {"PATH=/usr/sbin:/usr/bin:/sbin:/bin",
            "SEALRUN=" + sealrun_,
            "SEALRUN_CI_ROOT=" + dir_ / "ci",
            "CUSTOM_ENV_CI_JOB_ID=" + std::to_string(job_id),
            "CUSTOM_ENV_CI_PROJECT_DIR=" + dir_ / "project",
            "CUSTOM_ENV_SEALRUN_ADMISSION=" + admission.path,
            "CUSTOM_ENV_SEALRUN_ADMISSION_SHA256=" + admission.sha256,
            "BUILD_FAILURE_EXIT_CODE=77",
            "SYSTEM_FAILURE_EXIT_CODE=78"};
  }
  Captured stage(const std::string& script, const std::vector<std::string>& args,
                 const std::vector<std::string>& env) {
    SpawnOptions o;
    o.argv = {kExecutor + "/" + script};
    o.argv.insert(o.argv.end(), args.begin(), args.end());
    o.env = env;
    o.cwd = dir_.str();
    auto r = run_capture(o, 120000, 16 << 20);
    EXPECT_TRUE(r.ok()) << r.error().message();
    return r.ok() ? *r : Captured{};
  }
  nlohmann::json project_receipt() {
    std::string path = dir_ / "project/sealrun-receipt/receipt.json";
    EXPECT_TRUE(fs::is_regular_file(path)) << path;
    auto doc = nlohmann::json::parse(fs::exists(path) ? read_text(path) : "", nullptr, false);
    return doc.is_discarded() ? nlohmann::json::object() : doc;
  }
  std::string sealrun_ = std::string(SEALRUN_BINARY_DIR) + "/sealrun";
  std::string ci_state_;
};

TEST_F(GitlabExecutor, StagesMapExitCodes) {
  Frozen good = freeze("echo built > /out/hello.txt", {}, "good.json");
  auto e = env(101, good);

  auto config = stage("config.sh", {}, e);
  ASSERT_EQ(config.status.code, 0) << config.err;
  auto cfg = nlohmann::json::parse(config.out, nullptr, false);
  ASSERT_FALSE(cfg.is_discarded()) << config.out;
  EXPECT_EQ(cfg["builds_dir"], dir_ / "ci/builds/job-101/builds");
  EXPECT_EQ(cfg["driver"]["name"], "sealrun");

  auto prepare = stage("prepare.sh", {}, e);
  EXPECT_EQ(prepare.status.code, 0) << prepare.out << prepare.err;
  EXPECT_TRUE(fs::is_directory(dir_ / "ci/builds/job-101"));

  // The runner's own stages run as its scripts; the job's after_script does not run at all.
  write_text(dir_ / "sources.sh", "touch " + dir_ / "sources-ran\n");
  EXPECT_EQ(stage("run.sh", {dir_ / "sources.sh", "get_sources"}, e).status.code, 0);
  EXPECT_TRUE(fs::exists(dir_ / "sources-ran"));
  write_text(dir_ / "after.sh", "touch " + dir_ / "after-ran\n");
  EXPECT_EQ(stage("run.sh", {dir_ / "after.sh", "after_script"}, e).status.code, 0);
  EXPECT_FALSE(fs::exists(dir_ / "after-ran"));

  // The job's step is the admission; its receipt lands in the project directory.
  write_text(dir_ / "step.sh", "touch " + dir_ / "step-ran\n");
  auto built = stage("run.sh", {dir_ / "step.sh", "step_script"}, e);
  EXPECT_EQ(built.status.code, 0) << built.out << built.err;
  EXPECT_FALSE(fs::exists(dir_ / "step-ran"));
  EXPECT_EQ(project_receipt()["state"], "built");

  // A failing job is a build failure.
  Frozen failing = freeze("echo no >&2; exit 1", {}, "failing.json");
  auto failed = stage("run.sh", {dir_ / "step.sh", "step_script"}, env(102, failing));
  EXPECT_EQ(failed.status.code, 77) << failed.out << failed.err;
  EXPECT_EQ(project_receipt()["state"], "failed");

  // An admission edited after approval: prepare refuses it, and so would the step (exit 3): both
  // are system failures, not a verdict on the job. The artifacts still hold its receipt.
  std::string text = read_text(good.path);
  text.replace(text.find("echo built"), 10, "echo owned");
  Frozen tampered{dir_ / "tampered.json", good.sha256};
  write_text(tampered.path, text);
  EXPECT_EQ(stage("prepare.sh", {}, env(103, tampered)).status.code, 78);
  auto refused = stage("run.sh", {dir_ / "step.sh", "step_script"}, env(103, tampered));
  EXPECT_EQ(refused.status.code, 78) << refused.out << refused.err;
  EXPECT_EQ(project_receipt()["exit"], 3);
  EXPECT_EQ(read_text(dir_ / "project/sealrun-receipt/admission.json"), text);
  EXPECT_TRUE(fs::is_regular_file(dir_ / "project/sealrun-receipt/report.html"));

  auto cleanup = stage("cleanup.sh", {}, e);
  EXPECT_EQ(cleanup.status.code, 0) << cleanup.err;
  EXPECT_FALSE(fs::exists(dir_ / "ci/builds/job-101"));
}

TEST_F(GitlabExecutor, TheArtifactsAloneVerifyAndRebuildElsewhere) {
  fs::create_directories(ci_state_);
  auto key = sealrun({"key", "generate", "--out-dir", ci_state_ + "/keys"});
  ASSERT_EQ(key.status.code, 0) << key.out << key.err;
  Frozen good = freeze("echo built > /out/hello.txt; mkdir /out/sub; echo more > /out/sub/b.txt",
                       {}, "good.json");
  auto e = env(201, good);
  ASSERT_EQ(stage("prepare.sh", {}, e).status.code, 0);
  auto built = stage("run.sh", {dir_ / "step.sh", "step_script"}, e);
  ASSERT_EQ(built.status.code, 0) << built.out << built.err;

  std::string kept = dir_ / "project/sealrun-receipt";
  for (const char* f : {"receipt.json", "receipt.dsse.json", "outputs.jsonl", "report.html",
                        "admission.json", "out/hello.txt", "out/sub/b.txt"})
    EXPECT_TRUE(fs::is_regular_file(kept + "/" + f)) << f;
  EXPECT_TRUE(fs::is_directory(kept + "/logs"));
  // The auditor has the artifacts (as GitLab hands them out) and the signer's public key.
  std::string elsewhere = dir_ / "auditor";
  fs::copy(kept, elsewhere, fs::copy_options::recursive);
  fs::remove_all(kept);
  auto verify =
      sealrun({"receipt", "verify", elsewhere + "/receipt.json", "--key",
               ci_state_ + "/keys/sealrun.pub", "--outputs", elsewhere + "/out", "--strict"});
  EXPECT_EQ(verify.status.code, 0) << verify.out << verify.err;
  auto rebuild =
      sealrun({"rebuild", elsewhere + "/receipt.json", "--admission", elsewhere + "/admission.json",
               "--state-dir", dir_ / "auditor-state", "--json"});
  EXPECT_EQ(rebuild.status.code, 0) << rebuild.out << rebuild.err;
  EXPECT_EQ(nlohmann::json::parse(rebuild.out, nullptr, false).value("identical", false), true)
      << rebuild.out;
  // An altered output kept as an artifact is caught.
  write_text(elsewhere + "/out/hello.txt", "forged\n");
  auto forged = sealrun({"receipt", "verify", elsewhere + "/receipt.json", "--key",
                         ci_state_ + "/keys/sealrun.pub", "--outputs", elsewhere + "/out"});
  EXPECT_NE(forged.status.code, 0) << forged.out;
}

// A resource group made by a process that is gone and named by no grant record: what a killed
// run of another state directory (another CI on this host) leaves. Returns its locators.
std::vector<std::string> stray_group_of_a_dead_creator(const std::string& id) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return {};
  pid_t child = ::fork();
  if (child == 0) {
    ::close(p[0]);
    auto g = resgroup::create_group(id, resgroup::GroupLimits{64ULL << 20, 64ULL << 20, 0, 16});
    if (!g) _exit(1);
    std::string lines;
    for (const auto& l : (*g)->locators()) lines += l + "\n";
    (void)!::write(p[1], lines.data(), lines.size());
    _exit(0);  // no destructor: the group stays, its creator gone
  }
  ::close(p[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = ::read(p[0], buf, sizeof buf)) > 0;) text.append(buf, n);
  ::close(p[0]);
  ::waitpid(child, nullptr, 0);
  std::vector<std::string> out;
  for (size_t at = 0, nl; (nl = text.find('\n', at)) != std::string::npos; at = nl + 1)
    out.push_back(text.substr(at, nl - at));
  return out;
}

TEST_F(GitlabExecutor, EveryStageUsesTheStateDirAndCleanupSweepsOnlyItsRecords) {
  // Every sealrun command the stages run, as they ran it.
  std::string log = dir_ / "sealrun-calls.log";
  std::string wrapper = dir_ / "sealrun-logged";
  write_text(wrapper, "#!/bin/sh\necho \"$*\" >> '" + log + "'\nexec '" + sealrun_ + "' \"$@\"\n");
  fs::permissions(wrapper, fs::perms::owner_all);
  sealrun_ = wrapper;
  ci_state_ = dir_ / "elsewhere-state";
  fs::create_directories(ci_state_);
  Frozen good = freeze("echo built > /out/hello.txt", {}, "good.json");
  auto e = env(301, good);
  e.push_back("SEALRUN_STATE_DIR=" + ci_state_);

  ASSERT_EQ(stage("prepare.sh", {}, e).status.code, 0);
  ASSERT_EQ(stage("run.sh", {dir_ / "step.sh", "step_script"}, e).status.code, 0);
  // Made just before cleanup: another test's sweep (of every stray) may remove it at any time.
  const std::string name = "ci-test-other-state";
  auto stray = stray_group_of_a_dead_creator(name);
  ASSERT_FALSE(stray.empty());
  auto cleanup = stage("cleanup.sh", {}, e);
  EXPECT_EQ(cleanup.status.code, 0) << cleanup.err;
  EXPECT_EQ(cleanup.err.find("sweep reported a problem"), std::string::npos) << cleanup.err;
  EXPECT_TRUE(fs::is_regular_file(ci_state_ + "/results/gitlab-301/receipt.json"));
  // Not this state directory's: cleanup's sweep did not touch it (a sweep reports every group
  // it stops or removes, by its name).
  EXPECT_EQ(cleanup.err.find(name), std::string::npos) << cleanup.err;

  int with_state = 0;
  std::string calls = read_text(log);
  for (size_t at = 0, nl; (nl = calls.find('\n', at)) != std::string::npos; at = nl + 1) {
    std::string call = calls.substr(at, nl - at);
    if (call == "--version" || call.rfind("receipt report", 0) == 0) continue;
    EXPECT_NE(call.find("--state-dir " + ci_state_), std::string::npos) << call;
    if (call.rfind("sweep", 0) == 0) {
      EXPECT_NE(call.find("--state-only"), std::string::npos) << call;
    }
    ++with_state;
  }
  EXPECT_GE(with_state, 3) << calls;  // admit check, run, sweep
  // A sweep of every stray takes it (unless another test's sweep took it first).
  auto all = sealrun({"sweep", "--state-dir", ci_state_});
  EXPECT_EQ(all.status.code, 0) << all.out << all.err;
  for (const auto& l : stray) EXPECT_FALSE(fs::exists(l)) << l << "\n" << all.out;
}

}  // namespace
}  // namespace sealrun::testing
