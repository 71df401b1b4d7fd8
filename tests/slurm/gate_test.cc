// SPDX-License-Identifier: Apache-2.0
// The SPANK plugin's step gate (contrib/slurm/gate.h): which step command lines pass, and the
// message a refused user reads. Table-driven over real files in a temp dir.
#include "gate.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "tests/support/temp_dir.h"

namespace sealrun::testing {
namespace {

constexpr const char* kSealrun = "/opt/site/bin/sealrun";
// SHA-256 of the bytes "{}\n".
constexpr const char* kEmptyObjectSha =
    "ca3d163bab055381827226140568f3bef7eaac187cebd76878e0b63e9e442356";

struct GateResult {
  int rc;
  std::string why;
};

GateResult check(std::vector<std::string> args, bool allow_report_only = false) {
  sealrun_gate_config config{};
  config.sealrun_paths[0] = kSealrun;
  config.sealrun_paths[1] = "/usr/bin/sealrun";
  config.n_sealrun_paths = 2;
  config.allow_report_only = allow_report_only ? 1 : 0;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  char why[1024] = "";
  int rc = sealrun_gate_check(&config, static_cast<int>(argv.size()), argv.data(), why, sizeof why);
  return {rc, why};
}

class GateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    adm_ = dir_ / "adm.json";
    write_text(adm_, "{}\n");
  }
  TempDir dir_;
  std::string adm_;
};

TEST_F(GateTest, AdmittedRunPasses) {
  EXPECT_EQ(check({kSealrun, "run", adm_, "--sha256", kEmptyObjectSha, "--id", "x"}).rc, 0);
  EXPECT_EQ(check({"/usr/bin/sealrun", "run", adm_, "--id", "x",
                   "--sha256=" + std::string(kEmptyObjectSha)})
                .rc,
            0);
  // Relative to the working directory, as the task will resolve it.
  ASSERT_EQ(::chdir(dir_.str().c_str()), 0);
  EXPECT_EQ(check({kSealrun, "run", "adm.json", "--sha256", kEmptyObjectSha}).rc, 0);
}

TEST_F(GateTest, RefusalsSayWhy) {
  const std::string sha = kEmptyObjectSha;
  const std::string wrong = std::string(63, '0') + "1";
  struct Case {
    std::vector<std::string> argv;
    std::string why_contains;
  };
  const std::vector<Case> cases = {
      {{"/bin/true"}, "runs only admitted sealrun runs"},
      {{"sealrun", "run", adm_, "--sha256", sha}, "with that full path"},
      {{"/home/u/sealrun", "run", adm_, "--sha256", sha}, "not '/home/u/sealrun'"},
      {{kSealrun, "sweep"}, "the admission right after `run`"},
      {{kSealrun, "run", "--sha256", sha, adm_}, "the admission right after `run`"},
      {{kSealrun, "run", adm_}, "has no --sha256"},
      {{kSealrun, "run", adm_, "--sha256"}, "--sha256 needs a value"},
      {{kSealrun, "run", adm_, "--sha256", "ABC"}, "not 64 lower-case hex"},
      {{kSealrun, "run", adm_, "--sha256", sha, "--sha256", sha}, "more than once"},
      {{kSealrun, "run", adm_, "--sha256", wrong}, "does not match --sha256"},
      {{kSealrun, "run", dir_ / "missing.json", "--sha256", sha}, "cannot open the admission"},
      {{kSealrun, "run", dir_.str(), "--sha256", sha}, "not a regular file"},
      {{kSealrun, "run", adm_, "--sha256", sha, "--mode", "report-only"}, "report-only"},
      {{kSealrun, "run", adm_, "--sha256", sha, "--mode=report-only"}, "report-only"},
  };
  for (const auto& c : cases) {
    auto r = check(c.argv);
    std::string line;
    for (const auto& a : c.argv) line += a + " ";
    EXPECT_EQ(r.rc, -1) << line;
    EXPECT_NE(r.why.find(c.why_contains), std::string::npos) << line << "\n  said: " << r.why;
  }
  EXPECT_EQ(check({kSealrun, "run", adm_, "--sha256", sha, "--mode", "report-only"}, true).rc, 0);
}

TEST_F(GateTest, HostileAdmissionFilesAreRefusedWithoutBlocking) {
  // A symlink is not followed, a FIFO is not waited on, a large file is not read to its end.
  std::string link = dir_ / "link.json";
  ASSERT_EQ(::symlink(adm_.c_str(), link.c_str()), 0);
  std::string fifo = dir_ / "fifo.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string big = dir_ / "big.json";
  write_text(big, "");
  ASSERT_EQ(::truncate(big.c_str(), SEALRUN_GATE_MAX_ADMISSION + 1), 0);
  char hex[65];
  char why[512];
  EXPECT_EQ(sealrun_gate_sha256_file(link.c_str(), hex, why, sizeof why), -1);
  EXPECT_NE(std::string(why).find("cannot open"), std::string::npos) << why;
  EXPECT_EQ(sealrun_gate_sha256_file(fifo.c_str(), hex, why, sizeof why), -1);
  EXPECT_NE(std::string(why).find("not a regular file"), std::string::npos) << why;
  EXPECT_EQ(sealrun_gate_sha256_file(big.c_str(), hex, why, sizeof why), -1);
  EXPECT_NE(std::string(why).find("larger than"), std::string::npos) << why;
  ASSERT_EQ(sealrun_gate_sha256_file(adm_.c_str(), hex, why, sizeof why), 0) << why;
  EXPECT_STREQ(hex, kEmptyObjectSha);
}

}  // namespace
}  // namespace sealrun::testing
