// SPDX-License-Identifier: Apache-2.0
// The CI files of contrib/ci/ that cannot run for real here (label ci). GitLab and GitHub are not
// reachable from these machines, so: every shipped shell script passes `bash -n` and shellcheck,
// as do the scripts embedded in the GitLab and GitHub YAML files (which must parse); and the GitLab
// custom executor's scripts are driven the way GitLab Runner's custom executor protocol calls them
// (config, prepare, run per stage, cleanup; CUSTOM_ENV_* variables; BUILD_FAILURE_EXIT_CODE and
// SYSTEM_FAILURE_EXIT_CODE) against the real sealrun: this is the documented protocol, not GitLab
// Runner itself.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/controller/run_test_support.h"
#include "tests/support/temp_dir.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;

const std::string kContrib = std::string(SEALRUN_SOURCE_DIR) + "/contrib/ci";

Captured run_program(const std::vector<std::string>& argv,
                     std::optional<std::vector<std::string>> env = std::nullopt,
                     const std::string& cwd = "") {
  SpawnOptions o;
  o.argv = argv;
  o.env = std::move(env);
  o.cwd = cwd;
  auto r = run_capture(o, 120000);
  EXPECT_TRUE(r.ok()) << r.error().message();
  return r.ok() ? *r : Captured{};
}

TEST(ContribCi, ShippedScriptsPassBashNAndShellcheck) {
  int scripts = 0;
  for (const auto& e : fs::recursive_directory_iterator(kContrib)) {
    if (e.path().extension() != ".sh") continue;
    ++scripts;
    auto syntax = run_program({"/bin/bash", "-n", e.path().string()});
    EXPECT_EQ(syntax.status.code, 0) << e.path() << ": " << syntax.err;
    auto lint = run_program({"/usr/bin/shellcheck", "-x", e.path().filename().string()},
                            std::nullopt, e.path().parent_path().string());
    EXPECT_EQ(lint.status.code, 0) << e.path() << ":\n" << lint.out << lint.err;
  }
  EXPECT_GE(scripts, 5);
}

TEST(ContribCi, YamlFilesParseAndTheirScriptsPassShellcheck) {
  // Debian's python3 (with python3-yaml) pulls each job's shell out of the YAML.
  const std::string extract = R"(import sys, yaml
gh = yaml.safe_load(open(sys.argv[1]))
gl = yaml.safe_load(open(sys.argv[2]))
gh_run = [s["run"] for s in gh["jobs"]["build"]["steps"] if "run" in s]
assert len(gh_run) == 1, gh_run
open(sys.argv[3], "w").write("#!/bin/bash\n" + gh_run[0])
open(sys.argv[4], "w").write("#!/bin/bash\n" + "\n".join(gl["sealrun-build"]["script"]))
)";
  TempDir dir;
  auto x = run_program({"/usr/bin/python3", "-c", extract, kContrib + "/github/sealrun.yml",
                        kContrib + "/gitlab/gitlab-ci.yml", dir / "github.sh", dir / "gitlab.sh"});
  ASSERT_EQ(x.status.code, 0) << x.err;
  for (const char* name : {"github.sh", "gitlab.sh"}) {
    std::string text = read_text(dir / name);
    EXPECT_NE(text.find("sealrun run"), std::string::npos) << name;
    auto lint = run_program({"/usr/bin/shellcheck", dir / name});
    EXPECT_EQ(lint.status.code, 0) << name << ":\n" << lint.out << lint.err;
  }
}

class GitlabExecutor : public RunTest {
 protected:
  // The environment GitLab Runner gives the executor's scripts for job `job_id`.
  std::vector<std::string> env(int job_id, const Frozen& admission) {
    return {"PATH=/usr/sbin:/usr/bin:/sbin:/bin",
            "SEALRUN=" + std::string(SEALRUN_BINARY_DIR) + "/sealrun",
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
    std::vector<std::string> argv = {kContrib + "/gitlab/custom-executor/" + script};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_program(argv, env, dir_.str());
  }
  nlohmann::json project_receipt() {
    return nlohmann::json::parse(read_text(dir_ / "project/sealrun-receipt/receipt.json"), nullptr,
                                 false);
  }
};

TEST_F(GitlabExecutor, StagesMapExitCodes) {
  fs::create_directories(dir_ / "project");
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
  // are system failures, not a verdict on the job.
  std::string text = read_text(good.path);
  text.replace(text.find("echo built"), 10, "echo owned");
  Frozen tampered{dir_ / "tampered.json", good.sha256};
  write_text(tampered.path, text);
  EXPECT_EQ(stage("prepare.sh", {}, env(103, tampered)).status.code, 78);
  auto refused = stage("run.sh", {dir_ / "step.sh", "step_script"}, env(103, tampered));
  EXPECT_EQ(refused.status.code, 78) << refused.out << refused.err;
  EXPECT_EQ(project_receipt()["exit"], 3);

  auto cleanup = stage("cleanup.sh", {}, e);
  EXPECT_EQ(cleanup.status.code, 0) << cleanup.err;
  EXPECT_FALSE(fs::exists(dir_ / "ci/builds/job-101"));
}

}  // namespace
}  // namespace sealrun::testing
