// SPDX-License-Identifier: Apache-2.0
// slurm_context(): the Slurm job, step and node a receipt records, from SLURM_* variables.
#include "controller/run/slurm_context.h"

#include <gtest/gtest.h>

namespace sealrun {
namespace {

using Env = std::map<std::string, std::string>;

TEST(SlurmContext, OutsideSlurmIsNothing) {
  EXPECT_FALSE(slurm_context({}).has_value());
  EXPECT_FALSE(slurm_context({{"PATH", "/bin"}, {"SLURMD_NODENAME", "n1"}}).has_value());
}

TEST(SlurmContext, SrunStep) {
  // The variables a task of `srun` sees (taken from a real step on the test cluster).
  Env env{{"SLURM_JOB_ID", "13"},          {"SLURM_JOBID", "13"},
          {"SLURM_STEP_ID", "0"},          {"SLURM_STEPID", "0"},
          {"SLURMD_NODENAME", "vm"},       {"SLURM_CLUSTER_NAME", "sealrun-test"},
          {"SLURM_JOB_PARTITION", "main"}, {"SLURM_JOB_USER", "root"},
          {"SLURM_PROCID", "0"},           {"SLURM_LOCALID", "0"}};
  auto c = slurm_context(env);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ((*c)["job_id"], 13);
  EXPECT_EQ((*c)["step_id"], "0");
  EXPECT_EQ((*c)["node"], "vm");
  EXPECT_EQ((*c)["cluster"], "sealrun-test");
  EXPECT_EQ((*c)["partition"], "main");
  EXPECT_EQ((*c)["user"], "root");
  EXPECT_EQ((*c)["proc_id"], 0);
  EXPECT_EQ((*c)["local_id"], 0);
  EXPECT_FALSE(c->contains("array_job_id"));
}

TEST(SlurmContext, BatchScriptHasNoStepIdButIsTheBatchStep) {
  Env env{{"SLURM_JOB_ID", "14"}, {"ENVIRONMENT", "BATCH"}, {"SLURM_MEM_PER_CPU", "1024"}};
  auto c = slurm_context(env);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ((*c)["step_id"], "batch");
  EXPECT_EQ((*c)["mem_per_cpu_mb"], 1024);
  // Outside a step and outside a batch script (an salloc shell): no step at all.
  auto s = slurm_context({{"SLURM_JOB_ID", "15"}});
  ASSERT_TRUE(s.has_value());
  EXPECT_FALSE(s->contains("step_id"));
}

TEST(SlurmContext, OldSpellingsAndArrays) {
  Env env{{"SLURM_JOBID", "20"},
          {"SLURM_STEPID", "3"},
          {"SLURM_ARRAY_JOB_ID", "19"},
          {"SLURM_ARRAY_TASK_ID", "1"}};
  auto c = slurm_context(env);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ((*c)["job_id"], 20);
  EXPECT_EQ((*c)["step_id"], "3");
  EXPECT_EQ((*c)["array_job_id"], 19);
  EXPECT_EQ((*c)["array_task_id"], 1);
}

TEST(SlurmContext, MalformedValuesAreLeftOut) {
  struct Case {
    Env env;
    bool has_context;
  };
  const std::vector<Case> cases = {
      {{{"SLURM_JOB_ID", ""}}, false},    {{{"SLURM_JOB_ID", "12x"}}, false},
      {{{"SLURM_JOB_ID", "-1"}}, false},  {{{"SLURM_JOB_ID", "99999999999999999999999"}}, false},
      {{{"SLURM_JOB_ID", " 12"}}, false},
  };
  for (const auto& c : cases)
    EXPECT_EQ(slurm_context(c.env).has_value(), c.has_context) << c.env.begin()->second;

  Env env{{"SLURM_JOB_ID", "7"},
          {"SLURM_STEP_ID", "zero"},
          {"SLURMD_NODENAME", "node with spaces"},
          {"SLURM_CLUSTER_NAME", std::string(300, 'c')},
          {"SLURM_JOB_USER", "esc\x1b[31m"},
          {"SLURM_PROCID", "1.5"}};
  auto c = slurm_context(env);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(*c, nlohmann::json({{"job_id", 7}})) << c->dump();
}

TEST(SlurmContext, EnvironMapKeepsOnlySlurmVariables) {
  ::setenv("SLURM_JOB_ID", "42", 1);
  ::setenv("SEALRUN_SLURM_CONTEXT_TEST", "x", 1);
  auto m = environ_map();
  ::unsetenv("SLURM_JOB_ID");
  ::unsetenv("SEALRUN_SLURM_CONTEXT_TEST");
  EXPECT_EQ(m["SLURM_JOB_ID"], "42");
  EXPECT_EQ(m.count("SEALRUN_SLURM_CONTEXT_TEST"), 0u);
  EXPECT_EQ(m.count("PATH"), 0u);
  EXPECT_EQ((*slurm_context(m))["job_id"], 42);
}

// The exit-4 advice (issue 29): only inside a Slurm job, only for an ordinary user, only when
// process_count is what is missing.
TEST(SlurmSpankAdvice, OnlyWhereThePluginIsTheFix) {
  const Env slurm = {{"SLURM_JOB_ID", "42"}};
  struct Case {
    Env env;
    bool pids_missing, root, advised;
  };
  for (const Case& c : std::vector<Case>{{slurm, true, false, true},
                                         {slurm, false, false, false},
                                         {slurm, true, true, false},
                                         {Env{}, true, false, false},
                                         {{{"SLURM_JOB_ID", "x"}}, true, false, false}}) {
    std::string advice = slurm_spank_advice(c.env, c.pids_missing, c.root);
    EXPECT_EQ(!advice.empty(), c.advised) << advice;
    if (c.advised) {
      EXPECT_NE(advice.find("Under Slurm (job 42)"), std::string::npos) << advice;
      EXPECT_NE(advice.find("spank_sealrun.so"), std::string::npos) << advice;
      EXPECT_NE(advice.find("plugstack.conf"), std::string::npos) << advice;
    }
  }
}

}  // namespace
}  // namespace sealrun
