// SPDX-License-Identifier: Apache-2.0
// The gates on the real test cluster: job_submit.lua refuses at submission a batch job that is not
// an admitted `sealrun run` or whose admission does not hash to its --sha256; the SPANK plugin
// refuses an srun step that is not one, before anything of the user's runs, without draining the
// node. (The enforcement is sealrun's own check; these are early refusals with clear messages.)
#include <gtest/gtest.h>

#include "tests/slurm/cluster_support.h"

namespace sealrun::testing::slurm {
namespace {

class SubmissionTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(wait_until(node_ready, 60000, 100)) << "node not ready"; }
  Workspace ws_{ordinary_user()};
};

size_t jobs_in_queue() {
  auto c = run_as(root_identity(), {"squeue", "-h", "-o", "%i"}, "/");
  size_t n = 0;
  for (char ch : c.out) n += ch == '\n';
  return n;
}

TEST_F(SubmissionTest, NonAdmittedBatchJobsAreRefusedWithAReason) {
  Frozen a = ws_.freeze("adm.json", "echo hi > /out/x");
  std::string run = ws_.run_line(a, "never");
  std::string no_exec = run.substr(5);  // without "exec "
  struct Case {
    std::string wrap, says;
  };
  const std::vector<Case> cases = {
      {"hostname", "this cluster runs only admitted sealrun runs"},
      {"sealrun run adm.json --sha256 " + a.sha256, "with that full path"},
      {no_exec, "must start with `exec`"},
      {run + "; rm -rf ~", "only plain words"},
      {run + " $HOME", "only plain words"},
      {"echo first\n" + run, "must run one command"},
      {run + " --mode report-only", "refuses `--mode report-only`"},
      {"exec " + sealrun_bin() + " sweep", "the admission right after `run`"},
      {"exec " + sealrun_bin() + " run adm.json --id x", "has no --sha256"},
  };
  size_t before = jobs_in_queue();
  for (const auto& c : cases) {
    std::string err;
    auto job = ws_.sbatch(c.wrap, &err);
    EXPECT_FALSE(job.has_value()) << "accepted: " << c.wrap;
    EXPECT_NE(err.find("sealrun gate: "), std::string::npos) << c.wrap << "\n" << err;
    EXPECT_NE(err.find(c.says), std::string::npos) << c.wrap << "\n" << err;
  }
  EXPECT_EQ(jobs_in_queue(), before);
  EXPECT_FALSE(std::filesystem::exists(ws_.state() + "/results/never"));
}

TEST_F(SubmissionTest, AnotherInterpreterIsRefused) {
  Frozen a = ws_.freeze("adm.json", "true");
  std::string script = ws_.dir() + "/job.py";
  write_text(script, "#!/usr/bin/python3\n" + ws_.run_line(a, "py") + "\n");
  auto c = run_as(ws_.who(), {"sbatch", script}, ws_.dir());
  EXPECT_FALSE(c.status.success()) << c.out;
  EXPECT_NE(c.err.find("interpreter must be /bin/sh or /bin/bash"), std::string::npos) << c.err;
}

TEST_F(SubmissionTest, AWrongHashIsRefusedAtSubmission) {
  Frozen a = ws_.freeze("adm.json", "echo hi > /out/x");
  Frozen wrong = a;
  wrong.sha256[10] = wrong.sha256[10] == '0' ? '1' : '0';
  std::string err;
  EXPECT_FALSE(ws_.sbatch(ws_.run_line(wrong, "wrong"), &err).has_value());
  EXPECT_NE(err.find("does not match --sha256 " + wrong.sha256), std::string::npos) << err;

  // The admission changed after it was frozen: the same refusal, for the same reason.
  write_text(a.path, read_text(a.path) + " ");
  EXPECT_FALSE(ws_.sbatch(ws_.run_line(a, "changed"), &err).has_value());
  EXPECT_NE(err.find("does not match --sha256"), std::string::npos) << err;

  // An admission the submitter cannot read is refused without being read for them.
  std::string secret = ws_.dir() + "/secret.json";
  write_text(secret, "{}\n");
  ASSERT_EQ(::chmod(secret.c_str(), 0600), 0);  // root's: the test wrote it
  Frozen theirs{secret, a.sha256};
  EXPECT_FALSE(ws_.sbatch(ws_.run_line(theirs, "secret"), &err).has_value());
  EXPECT_NE(err.find("cannot be read by the submitting user"), std::string::npos) << err;
}

TEST_F(SubmissionTest, NonAdmittedStepIsRefusedAndTheNodeStaysUp) {
  Frozen a = ws_.freeze("adm.json", "true");
  Frozen wrong = a;
  wrong.sha256[0] = wrong.sha256[0] == 'a' ? 'b' : 'a';
  struct Case {
    std::vector<std::string> argv;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"srun", "/bin/true"}, "this cluster runs only admitted sealrun runs"},
      {{"srun", "/bin/sh", "-c", "id"}, "not '/bin/sh'"},
      {[&] {
         auto v = ws_.run_argv(wrong, "step-wrong");
         v.insert(v.begin(), "srun");
         return v;
       }(),
       "does not match --sha256"},
  };
  for (const auto& c : cases) {
    auto r = run_as(ws_.who(), c.argv, ws_.dir(), 60000);
    EXPECT_EQ(r.status.code, 1) << r.out << r.err;
    EXPECT_NE(r.err.find("sealrun: job"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "") << "the refused command ran";
  }
  // Refusing a step did not take the node out of service.
  EXPECT_TRUE(wait_until(node_ready, 10000, 100));
  auto state = run_as(root_identity(), {"sinfo", "-h", "-N", "-o", "%T"}, "/");
  EXPECT_EQ(state.out.find("drain"), std::string::npos) << state.out;
}

}  // namespace
}  // namespace sealrun::testing::slurm
