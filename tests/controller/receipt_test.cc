// SPDX-License-Identifier: Apache-2.0
#include "controller/receipt/receipt.h"

#include <gtest/gtest.h>

#include "controller/receipt/receipt_review.h"
#include "core/strict_json.h"

namespace sealrun::receipt {
namespace {

Receipt built_receipt() {
  Receipt r;
  r.id = "r1";
  r.state = "built";
  r.exit = 0;
  r.reason = "ok";
  r.admission_sha256 = std::string(64, 'a');
  r.verifications.push_back({"source.manifest", "x", "x", true});
  r.grant =
      ContainmentRecord{"bwrap", "enforcing", {"network"}, {}, {}, {"network"}, {"bwrap: ok"}};
  CommandRecord c;
  c.label = "job";
  c.argv = {"/bin/true"};
  c.exit = 0;
  r.commands.push_back(c);
  r.outputs.push_back({"hello", 5, std::string(64, 'b')});
  r.outputs_recorded = true;
  r.outputs_bytes = 5;
  r.stop_confirmed = true;
  r.cleanup.push_back({"remove the owned root", true, ""});
  return r;
}

std::vector<VerifyFinding> failures(const std::string& bytes) {
  auto findings = verify_receipt_bytes(bytes);
  EXPECT_TRUE(findings.ok()) << findings.error().message();
  std::vector<VerifyFinding> out;
  for (const auto& f : *findings)
    if (!f.pass) out.push_back(f);
  return out;
}

TEST(Receipt, RenderedBuiltReceiptVerifies) {
  std::string bytes = render_receipt(built_receipt(), 1 << 20);
  auto bad = failures(bytes);
  EXPECT_TRUE(bad.empty()) << bad[0].check << ": " << bad[0].detail;
}

TEST(Receipt, OneChangedByteBreaksTheDigest) {
  std::string bytes = render_receipt(built_receipt(), 1 << 20);
  auto pos = bytes.find("\"hello\"");
  ASSERT_NE(pos, std::string::npos);
  bytes[pos + 1] = 'j';
  auto bad = failures(bytes);
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].check, "digest");
}

TEST(Receipt, InconsistentVerdictsAreCaught) {
  struct Case {
    const char* name;
    void (*mutate)(Receipt&);
    const char* failing_check;
  } cases[] = {
      {"built with exit 5", [](Receipt& r) { r.exit = 5; }, "built is consistent"},
      {"built without confirmed stop", [](Receipt& r) { r.stop_confirmed = false; },
       "built is consistent"},
      {"built with a failed command", [](Receipt& r) { r.commands[0].exit = 1; },
       "built is consistent"},
      {"built with a failed check", [](Receipt& r) { r.verifications[0].pass = false; },
       "built is consistent"},
      {"failed without reason",
       [](Receipt& r) {
         r.state = "failed";
         r.exit = 5;
         r.reason = "";
       },
       "failure has a reason"},
      {"failed with exit 0",
       [](Receipt& r) {
         r.state = "failed";
         r.exit = 0;
       },
       "failure has a failing exit"},
      {"unknown state", [](Receipt& r) { r.state = "maybe"; }, "state"},
      {"not_run that ran a job",
       [](Receipt& r) {
         r.state = "not_run";
         r.exit = 3;
       },
       "not_run ran no job"},
  };
  for (const auto& c : cases) {
    Receipt r = built_receipt();
    c.mutate(r);
    auto bad = failures(render_receipt(r, 1 << 20));
    bool found = false;
    for (const auto& f : bad) found = found || f.check == c.failing_check;
    EXPECT_TRUE(found) << c.name;
  }
}

TEST(Receipt, HugeRunStaysWithinTheBoundAndSaysWhatWasCut) {
  Receipt r = built_receipt();
  for (int i = 0; i < 300; ++i) {
    CommandRecord c = r.commands[0];
    c.label = "step" + std::to_string(i);
    c.stdout_record.tail = std::string(100000, 'x');
    c.argv.push_back(std::string(5000, 'y'));
    r.commands.push_back(c);
  }
  for (int i = 0; i < 100000; ++i) r.samples.push_back({i, static_cast<uint64_t>(i), 0, 1});
  for (int i = 0; i < 50000; ++i)
    r.outputs.push_back({"out/" + std::to_string(i), 1, std::string(64, 'c')});
  for (size_t max : {size_t{16 * 1024}, size_t{64 * 1024}, size_t{1 << 20}}) {
    std::string bytes = render_receipt(r, max);
    EXPECT_LE(bytes.size(), max);
    auto doc = parse_strict_json(bytes);
    ASSERT_TRUE(doc.ok()) << doc.error().message();
    EXPECT_FALSE((*doc)["truncated"].empty());
    EXPECT_TRUE(failures(bytes).empty()) << "max " << max << ": " << failures(bytes)[0].detail;
  }
}

TEST(Receipt, TailsAreValidUtf8AfterCutting) {
  std::string s =
      "ab\xc3\xa9"
      "cd";                             // é is two bytes
  EXPECT_EQ(bounded_tail(s, 3), "cd");  // would start inside é: skipped
  EXPECT_EQ(bounded_tail(s, 4),
            "\xc3\xa9"
            "cd");
}

TEST(ReceiptReview, InTotoSubjectsAreTheOutputs) {
  auto doc = nlohmann::json::parse(render_receipt(built_receipt(), 1 << 20));
  auto st = to_in_toto(doc);
  EXPECT_EQ(st["_type"], "https://in-toto.io/Statement/v1");
  EXPECT_EQ(st["predicateType"], "https://slsa.dev/provenance/v1");
  ASSERT_EQ(st["subject"].size(), 1u);
  EXPECT_EQ(st["subject"][0]["name"], "hello");
  EXPECT_EQ(st["subject"][0]["digest"]["sha256"], std::string(64, 'b'));
}

}  // namespace
}  // namespace sealrun::receipt
