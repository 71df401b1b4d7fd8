// SPDX-License-Identifier: Apache-2.0
// The CI files of contrib/ci/ that cannot run for real here (label ci). GitLab and GitHub are not
// reachable from these machines, so: every shipped shell script passes `bash -n` and shellcheck,
// as do the scripts embedded in the GitLab and GitHub YAML files (which must parse). The GitLab
// custom executor's scripts are driven stage by stage in gitlab_executor_test.cc.
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

}  // namespace
}  // namespace sealrun::testing
