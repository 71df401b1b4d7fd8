// SPDX-License-Identifier: Apache-2.0
// A real CI for real (label ci): Buildbot 3.7 with the shipped contrib/ci/buildbot/master.cfg
// (buildbot_fixture.h). A change sent with `buildbot sendchange` names an admission and its
// SHA-256; the build's step is `sealrun run` (the built executable, as root, like
// run_integration_test) in a state directory that signs its receipts, and the master keeps the
// run's whole record. Checked: the build is SUCCESS; the kept artifacts alone, copied elsewhere,
// pass `receipt verify --key --outputs --strict` and `rebuild`; then a tampered admission (same
// SHA-256 claimed) makes the build EXCEPTION, the step's exit code 3, its receipt not_run, kept
// too. Master and worker are stopped and nothing with the temp dir in its command line is left.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/ci/buildbot_fixture.h"
#include "tests/support/temp_dir.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;

TEST_F(Buildbot, AdmittedChangeBuildsAndATamperedAdmissionTurnsTheBuildRed) {
  start_master_and_worker();
  Frozen good = freeze("echo built > /out/hello.txt");

  send_change(good, "r1");
  nlohmann::json first = wait_for_build(1);
  ASSERT_FALSE(first.is_null());
  EXPECT_EQ(first["results"], kBuildSuccess) << first.dump(2);
  EXPECT_EQ(step_result(first, "sealrun run"), kBuildSuccess);
  for (const char* step : {"keep receipt", "keep envelope", "keep run directory", "receipt report",
                           "keep report", "keep admission"})
    EXPECT_EQ(step_result(first, step), kBuildSuccess) << step;
  nlohmann::json receipt = kept_receipt(first);
  EXPECT_EQ(receipt["state"], "built") << receipt.dump(2);
  EXPECT_EQ(receipt["admission_sha256"], good.sha256);
  EXPECT_EQ(receipt["id"], first["properties"]["sealrun_id"]);

  // The artifacts alone, somewhere else: the signature, the outputs and how it ran verify, and
  // the admission they hold rebuilds the run to identical outputs.
  std::string kept = kept_dir(first);
  for (const char* f : {"receipt.json", "receipt.dsse.json", "outputs.jsonl", "report.html",
                        "admission.json", "out/hello.txt"})
    EXPECT_TRUE(fs::is_regular_file(kept + "/" + f)) << f;
  EXPECT_TRUE(fs::is_directory(kept + "/logs"));
  EXPECT_NE(read_text(kept + "/report.html").find(receipt["id"].get<std::string>()),
            std::string::npos);
  std::string elsewhere = dir_ / "auditor";
  fs::copy(kept, elsewhere, fs::copy_options::recursive);
  auto verify =
      sealrun({"receipt", "verify", elsewhere + "/receipt.json", "--key",
               bb_state_ + "/keys/sealrun.pub", "--outputs", elsewhere + "/out", "--strict"});
  EXPECT_EQ(verify.status.code, 0) << verify.out << verify.err;
  auto rebuild =
      sealrun({"rebuild", elsewhere + "/receipt.json", "--admission", elsewhere + "/admission.json",
               "--state-dir", dir_ / "auditor-state", "--id", "audit-rebuild", "--json"});
  EXPECT_EQ(rebuild.status.code, 0) << rebuild.out << rebuild.err;
  auto report = nlohmann::json::parse(rebuild.out, nullptr, false);
  EXPECT_EQ(report.value("identical", false), true) << rebuild.out;

  // The same approval (SHA-256) with different bytes: the command was changed after approval.
  std::string text = read_text(good.path);
  auto at = text.find("echo built");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 10, "echo owned");
  Frozen tampered{dir_ / "tampered.json", good.sha256};
  write_text(tampered.path, text);
  send_change(tampered, "r2");
  nlohmann::json second = wait_for_build(2);
  ASSERT_FALSE(second.is_null());
  EXPECT_EQ(second["results"], kBuildException) << second.dump(2);
  EXPECT_EQ(step_result(second, "sealrun run"), kBuildException);
  EXPECT_NE(second["run_log"].get<std::string>().find("program finished with exit code 3"),
            std::string::npos)
      << second["run_log"];
  EXPECT_EQ(step_result(second, "keep receipt"), kBuildSuccess);
  EXPECT_EQ(step_result(second, "keep envelope"), kBuildSuccess);  // refusals are signed too
  nlohmann::json refused = kept_receipt(second);
  EXPECT_EQ(refused["exit"], 3) << refused.dump(2);
  EXPECT_NE(refused["state"], "built");
  // What was sent is kept as sent: the tampered bytes.
  EXPECT_EQ(read_text(kept_dir(second) + "/admission.json"), text);
  EXPECT_TRUE(fs::is_regular_file(kept_dir(second) + "/report.html"));
}

}  // namespace
}  // namespace sealrun::testing
