// SPDX-License-Identifier: Apache-2.0
// Unit tests of the answer to one Run: the facts read back from receipt bytes, the decision
// between a RunResponse and an error status for every way a run can end, and the resource-usage
// messages that carry them.
#include "remote/action_result.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "remote/usage_proto.h"

namespace sealrun::remote {
namespace {

using nlohmann::json;

json receipt(const std::string& state, int exit, json command) {
  json r = {{"schema", "sealrun-receipt-v1"},
            {"id", "reapi-1"},
            {"state", state},
            {"exit", exit},
            {"reason", "because"},
            {"admission_sha256", std::string(64, 'a')},
            {"stop_confirmed", true},
            {"commands", json::array()},
            {"memory", {{"peak_bytes", 4096}}}};
  if (!command.is_null()) r["commands"].push_back(command);
  return r;
}

json job(json exit, int signal) {
  return {{"label", "job"},          {"exit", exit},
          {"signal", signal},        {"timed_out", false},
          {"stdout", {{"size", 7}}}, {"stderr", {{"size", 0}}}};
}

ReceiptFacts facts_of(const json& r) {
  auto f = read_receipt_facts(r.dump());
  EXPECT_TRUE(f.ok()) << f.error().message();
  return f.ok() ? *f : ReceiptFacts{};
}

TEST(ReceiptFacts, ReadBack) {
  ReceiptFacts f = facts_of(receipt("failed", 5, job(3, 0)));
  EXPECT_EQ(f.id, "reapi-1");
  EXPECT_EQ(f.state, "failed");
  EXPECT_EQ(f.sealrun_exit, 5);
  EXPECT_TRUE(f.job_ran);
  EXPECT_EQ(f.job_exit, 3);
  EXPECT_EQ(f.stdout_bytes, 7u);
  EXPECT_EQ(f.peak_bytes, 4096u);
  EXPECT_EQ(f.receipt_sha256.size(), 64u);
}

TEST(ReceiptFacts, OnlyTrueIsConfirmed) {
  json r = receipt("built", 0, job(0, 0));
  r["stop_confirmed"] = "yes";
  EXPECT_FALSE(facts_of(r).stop_confirmed);
  r["stop_confirmed"] = true;
  EXPECT_TRUE(facts_of(r).stop_confirmed);
}

TEST(ReceiptFacts, RefusesWhatIsNotAReceipt) {
  EXPECT_FALSE(read_receipt_facts("[]").ok());
  EXPECT_FALSE(read_receipt_facts("{\"id\": \"x\"}").ok());
  EXPECT_FALSE(read_receipt_facts("{\"id\": \"x\", \"id\": \"y\", \"state\": \"built\"}").ok());
  EXPECT_FALSE(read_receipt_facts("not json").ok());
}

TEST(RunJson, ReceiptPathIsWhereRunSaysItWroteIt) {
  EXPECT_EQ(receipt_path_from_run_json(
                R"({"id":"x","receipt_path":"/s/refusals/x/20261130T010203Z-7.json"})"),
            "/s/refusals/x/20261130T010203Z-7.json");
  EXPECT_EQ(receipt_path_from_run_json(R"({"receipt_path":null,"error":"id taken"})"),
            std::nullopt);
  EXPECT_EQ(receipt_path_from_run_json(R"({"receipt_path":"relative.json"})"), std::nullopt);
  EXPECT_EQ(receipt_path_from_run_json(R"({"receipt_path":"/etc/passwd"})"), std::nullopt);
  EXPECT_EQ(receipt_path_from_run_json("run x: built\n/s/results/x/receipt.json\n"), std::nullopt);
}

struct Case {
  const char* name;
  std::optional<json> receipt;  // nullopt: no receipt was written
  int sealrun_code;
  bool cancelled;
  Answer answer;
  int64_t exit_code;
  const char* signal;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class Decide : public ::testing::TestWithParam<Case> {};

TEST_P(Decide, Table) {
  const Case& c = GetParam();
  std::optional<ReceiptFacts> facts;
  if (c.receipt) facts = facts_of(*c.receipt);
  Decision d = decide(facts, c.sealrun_code, 0, c.cancelled, "stderr of sealrun run");
  EXPECT_EQ(d.answer, c.answer) << d.message;
  EXPECT_EQ(d.exit_code, c.exit_code);
  EXPECT_EQ(d.termination_signal, c.signal);
  EXPECT_FALSE(d.message.empty());
}

json unconfirmed() {
  json r = receipt("failed", 7, job(nullptr, 9));
  r["stop_confirmed"] = false;
  return r;
}

const Case kCases[] = {
    {"built", receipt("built", 0, job(0, 0)), 0, false, Answer::kResponse, 0, ""},
    {"job_failed", receipt("failed", 5, job(3, 0)), 5, false, Answer::kResponse, 3, ""},
    {"job_killed", receipt("failed", 5, job(nullptr, 9)), 5, false, Answer::kResponse, -1, "KILL"},
    {"guard_tripped", receipt("failed", 6, job(nullptr, 15)), 6, false, Answer::kResponse, -1,
     "TERM"},
    {"refused", receipt("not_run", 3, nullptr), 3, false, Answer::kFailedPrecondition, 0, ""},
    {"no_containment", receipt("not_run", 4, nullptr), 4, false, Answer::kUnavailable, 0, ""},
    {"stop_unconfirmed", unconfirmed(), 7, false, Answer::kInternal, 0, ""},
    // The job exited 0 but a post-run check failed: exit 0 would claim a success.
    {"exit0_but_failed", receipt("failed", 5, job(0, 0)), 5, false, Answer::kFailedPrecondition, 0,
     ""},
    {"cancelled", receipt("failed", 5, job(nullptr, 15)), 5, true, Answer::kCancelled, 0, ""},
    {"no_receipt", std::nullopt, 2, false, Answer::kInternal, 0, ""},
};

INSTANTIATE_TEST_SUITE_P(Table, Decide, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ResourceUsage, PosixUsageTakesTheGroupPeakAndTheSignal) {
  struct rusage u {};
  u.ru_utime = {1, 500000};
  u.ru_stime = {0, 250000};
  u.ru_maxrss = 100;  // KiB
  u.ru_minflt = 7;
  ReceiptFacts f = facts_of(receipt("failed", 5, job(nullptr, 9)));
  Decision d = decide(f, 5, 0, false, "");
  auto p = posix_usage(u, f, d);
  EXPECT_EQ(p.user_time().seconds(), 1);
  EXPECT_EQ(p.user_time().nanos(), 500000000);
  EXPECT_EQ(p.system_time().nanos(), 250000000);
  EXPECT_EQ(p.maximum_resident_set_size(), 4096);  // the receipt's group peak
  EXPECT_EQ(p.page_reclaims(), 7);
  EXPECT_EQ(p.termination_signal(), "KILL");
  auto without = posix_usage(u, std::nullopt, d);
  EXPECT_EQ(without.maximum_resident_set_size(), 100 * 1024);  // ru_maxrss, in bytes

  auto ref = receipt_reference(f, "", std::string(64, 'c'));
  EXPECT_EQ(ref.run_id(), "reapi-1");
  EXPECT_EQ(ref.state(), "failed");
  EXPECT_EQ(ref.sealrun_exit(), 5);
  EXPECT_EQ(ref.receipt_sha256(), f.receipt_sha256);
  EXPECT_EQ(ref.input_manifest_sha256(), std::string(64, 'c'));
}

}  // namespace
}  // namespace sealrun::remote
