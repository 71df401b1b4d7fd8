// SPDX-License-Identifier: Apache-2.0
// Admitted runs on the real test cluster: `sbatch` and `srun` of a `sealrun run`, as root and as an
// ordinary user, every dimension enforced (the user's thanks to the SPANK plugin's pids group);
// receipts in the state directory the submitter names; scancel mid-run; a node restart mid-run and
// `sealrun sweep` afterwards.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "tests/slurm/cluster_support.h"

namespace sealrun::testing::slurm {
namespace {

namespace fs = std::filesystem;

class RunsTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(wait_until(node_ready, 60000, 100)) << "node not ready"; }
};

std::vector<std::string> with_srun(std::vector<std::string> argv) {
  argv.insert(argv.begin(), "srun");
  return argv;
}

// The last line sealrun run prints is its receipt's path.
std::string last_line(const std::string& out) {
  std::string s = out;
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s.substr(s.rfind('\n') + 1);
}

TEST_F(RunsTest, RootSbatchWaitRunsAnAdmittedRun) {
  Workspace ws(root_identity());
  Frozen a = ws.freeze("adm.json", "echo built > /out/result.txt");
  auto c = run_as(ws.who(),
                  {"sbatch", "--wait", "-o", ws.dir() + "/out.txt", "--wrap", ws.run_line(a, "rb")},
                  ws.dir());
  ASSERT_EQ(c.status.code, 0) << c.out << c.err << read_text(ws.dir() + "/out.txt");
  auto r = ws.receipt("rb");
  EXPECT_EQ(r["state"], "built") << r.dump();
  expect_fully_enforced(r);
  EXPECT_EQ(last_line(read_text(ws.dir() + "/out.txt")), ws.receipt_path("rb"));
}

TEST_F(RunsTest, RootSrunRunsAnAdmittedRun) {
  Workspace ws(root_identity());
  Frozen a = ws.freeze("adm.json", "echo built > /out/result.txt");
  auto c = run_as(ws.who(), with_srun(ws.run_argv(a, "rs")), ws.dir());
  ASSERT_EQ(c.status.code, 0) << c.out << c.err;
  EXPECT_EQ(last_line(c.out), ws.receipt_path("rs"));
  auto r = ws.receipt("rs");
  EXPECT_EQ(r["state"], "built") << r.dump();
  expect_fully_enforced(r);
}

TEST_F(RunsTest, OrdinaryUserSbatchRunIsFullyEnforced) {
  Workspace ws(ordinary_user());
  Frozen a = ws.freeze("adm.json", "echo built > /out/result.txt");
  std::string err;
  auto job = ws.sbatch(ws.run_line(a, "ub"), &err);
  ASSERT_TRUE(job.has_value()) << err;
  auto info = wait_job_finished(*job);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->state, "COMPLETED")
      << read_text(ws.dir() + "/slurm-" + std::to_string(*job) + ".out");
  EXPECT_EQ(info->exit_code, "0:0");
  EXPECT_EQ(info->requeue, "0") << "the gate makes admitted jobs non-requeueable";
  auto r = ws.receipt("ub");
  EXPECT_EQ(r["state"], "built") << r.dump();
  expect_fully_enforced(r);
  struct stat st {};
  ASSERT_EQ(::stat(ws.receipt_path("ub").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, ws.who().uid) << "the run did not run as the user";
}

TEST_F(RunsTest, OrdinaryUserSrunRunIsFullyEnforcedAndItsMemoryLimitHolds) {
  Workspace ws(ordinary_user());
  Frozen ok = ws.freeze("ok.json", "echo built > /out/result.txt");
  auto c = run_as(ws.who(), with_srun(ws.run_argv(ok, "us")), ws.dir());
  ASSERT_EQ(c.status.code, 0) << c.out << c.err;
  expect_fully_enforced(ws.receipt("us"));

  // 200 MB through `tail` (one endless line, held whole) under a 64 MiB memory.max: OOM-killed in
  // sealrun's group below the step's, and the receipt says so.
  Frozen big = ws.freeze("big.json", "head -c 200000000 /dev/zero | tail > /dev/null");
  auto b = run_as(ws.who(), with_srun(ws.run_argv(big, "us-oom")), ws.dir());
  EXPECT_EQ(b.status.code, 5) << b.out << b.err;
  auto r = ws.receipt("us-oom");
  EXPECT_EQ(r["state"], "failed");
  expect_fully_enforced(r);
  EXPECT_GE(r["memory"]["events"]["oom_kill"].get<int>(), 1) << r["memory"].dump();
  EXPECT_LE(r["memory"]["peak_bytes"].get<uint64_t>(), 67108864u) << r["memory"].dump();
}

TEST_F(RunsTest, SlurmsLowerMemoryLimitIsTheEffectiveOneInTheReceipt) {
  // The job asks Slurm for 48 MiB; the admission allows 64 MiB. sealrun's group nests below the
  // step's (use_hierarchy 1), so Slurm's limit is the one that binds, and the receipt says so and
  // names Slurm's group (ACCEPTANCE 33 under Slurm).
  Workspace ws(ordinary_user());
  Frozen a = ws.freeze("adm.json", "echo built > /out/result.txt");
  auto argv = ws.run_argv(a, "slurm-mem");
  argv.insert(argv.begin(), {"srun", "--mem=48M"});
  auto c = run_as(ws.who(), argv, ws.dir());
  ASSERT_EQ(c.status.code, 0) << c.out << c.err;
  auto r = ws.receipt("slurm-mem");
  bool found = false;
  for (const auto& l : r["memory"]["limits"]) {
    if (l["name"] != "memory_max_bytes") continue;
    found = true;
    EXPECT_EQ(l["observed"], 67108864) << l.dump();  // sealrun's own group: as admitted
    EXPECT_EQ(l["effective"], 48 * 1024 * 1024) << l.dump();
    std::string by = l["effective_set_by"].get<std::string>();
    EXPECT_NE(by.find("/slurm"), std::string::npos) << by;
    EXPECT_NE(by.find("/job_"), std::string::npos) << by;
  }
  EXPECT_TRUE(found) << r["memory"].dump();
}

// Restores a file's bytes when the test ends, however it ends.
class FileGuard {
 public:
  explicit FileGuard(std::string path) : path_(std::move(path)), bytes_(read_text(path_)) {}
  ~FileGuard() { write_text(path_, bytes_); }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string path_, bytes_;
};

TEST_F(RunsTest, WithoutThePluginsPidsGroupTheUsersRunIsRefused) {
  // The contrast that shows what the SPANK plugin is for: with its delegation off (slurmstepd
  // reads plugstack.conf at each step), Slurm leaves the user's step in the pids root, where the
  // user cannot make a group, and sealrun refuses to run unenforced (exit 4, nothing executed).
  FileGuard plugstack(cluster_dir() + "/etc/plugstack.conf");
  std::string line = plugstack.bytes();
  while (!line.empty() && line.back() == '\n') line.pop_back();
  write_text(cluster_dir() + "/etc/plugstack.conf", line + " delegate=off\n");
  Workspace ws(ordinary_user());
  Frozen a = ws.freeze("adm.json", "echo built > /out/result.txt");
  auto c = run_as(ws.who(), with_srun(ws.run_argv(a, "nodelegate")), ws.dir());
  EXPECT_EQ(c.status.code, 4) << c.out << c.err;
  // A refusal keeps no id; its receipt is where sealrun's last line says (STATE/refusals/...).
  std::string path = last_line(c.out);
  EXPECT_EQ(path.rfind(ws.state() + "/refusals/nodelegate/", 0), 0u) << c.out;
  auto r = nlohmann::json::parse(read_text(path), nullptr, false);
  EXPECT_EQ(r["state"], "not_run") << r.dump();
  EXPECT_NE(r["reason"].get<std::string>().find("process_count"), std::string::npos) << r["reason"];
  // Under Slurm the refusal names what fixes it: the SPANK plugin (issue 29).
  EXPECT_NE(r["reason"].get<std::string>().find("SPANK plugin, spank_sealrun.so"),
            std::string::npos)
      << r["reason"];
  EXPECT_TRUE(r["commands"].empty()) << r["commands"].dump();
}

TEST_F(RunsTest, ReceiptsOfEveryJobAreInTheStateDirTheSubmitterNamed) {
  Workspace ws(ordinary_user());
  Frozen a = ws.freeze("adm.json", "echo built > /out/result.txt");
  std::string err;
  auto job = ws.sbatch(ws.run_line(a, "collect-1"), &err);
  ASSERT_TRUE(job.has_value()) << err;
  auto c = run_as(ws.who(), with_srun(ws.run_argv(a, "collect-2")), ws.dir());
  EXPECT_EQ(c.status.code, 0) << c.err;
  ASSERT_TRUE(wait_job_finished(*job).has_value());
  for (const char* id : {"collect-1", "collect-2"}) {
    ASSERT_TRUE(fs::exists(ws.receipt_path(id))) << id;
    auto v = run_as(ws.who(), {sealrun_bin(), "receipt", "verify", ws.receipt_path(id)}, ws.dir());
    EXPECT_EQ(v.status.code, 0) << id << ": " << v.out << v.err;
  }
}

// `sealrun receipt list` finds every job's receipt in the shared state directory.
TEST_F(RunsTest, ReceiptListListsEveryJobsReceipt) {
  Workspace ws(ordinary_user());
  Frozen a = ws.freeze("adm.json", "echo built > /out/result.txt");
  for (const char* id : {"list-1", "list-2"})
    ASSERT_EQ(run_as(ws.who(), with_srun(ws.run_argv(a, id)), ws.dir()).status.code, 0);
  auto c = run_as(ws.who(), {sealrun_bin(), "receipt", "list", "--state-dir", ws.state(), "--json"},
                  ws.dir());
  ASSERT_EQ(c.status.code, 0) << c.err;
  EXPECT_NE(c.out.find("list-1"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("list-2"), std::string::npos) << c.out;
}

// The receipt records where in the cluster the run happened (controller/run/slurm_context.h).
TEST_F(RunsTest, ReceiptRecordsTheSlurmJobAndStep) {
  Workspace ws(ordinary_user());
  Frozen a = ws.freeze("adm.json", "echo built > /out/result.txt");
  std::string err;
  auto job = ws.sbatch(ws.run_line(a, "ids-batch"), &err);
  ASSERT_TRUE(job.has_value()) << err;
  ASSERT_TRUE(wait_job_finished(*job).has_value());
  auto r = ws.receipt("ids-batch");
  EXPECT_EQ(r["slurm"]["job_id"], *job) << r.dump();
  EXPECT_EQ(r["slurm"]["step_id"], "batch");
  EXPECT_TRUE(r["slurm"].contains("node"));
  ASSERT_EQ(run_as(ws.who(), with_srun(ws.run_argv(a, "ids-step")), ws.dir()).status.code, 0);
  EXPECT_EQ(ws.receipt("ids-step")["slurm"]["step_id"], "0");
}

}  // namespace
}  // namespace sealrun::testing::slurm
