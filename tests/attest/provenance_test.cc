// SPDX-License-Identifier: Apache-2.0
// The export: a built receipt becomes a Statement whose every field is where docs/build-type.md
// says; a failed one is refused unless include_failed, which records the outcome and uses the
// "unsuccessful" builder id; a run without output files is exported about its receipt; receipts
// without the 0.2.0 fields or with broken inputs are refused by name.
#include "attest/provenance.h"

#include <gtest/gtest.h>

#include "attest/dsse.h"
#include "attest/openssl_util.h"
#include "tests/attest/sample_receipt.h"
#include "tests/support/temp_dir.h"

namespace sealrun::attest {
namespace {

using nlohmann::json;
using testing::receipt_bytes;
using testing::sample_receipt;

json statement_of(const json& receipt, ExportOptions options = {}) {
  auto r = receipt_to_statement(receipt, std::string(64, '9'), options);
  EXPECT_TRUE(r) << r.error().message();
  return r ? *r : json();
}

std::string refusal(const json& receipt, ExportOptions options = {}) {
  auto r = receipt_to_statement(receipt, std::string(64, '9'), options);
  return r ? std::string("(exported)") : r.error().message();
}

TEST(Provenance, BuiltReceiptExportsEveryDocumentedField) {
  json r = sample_receipt();
  json s = statement_of(r);
  EXPECT_EQ(s["_type"], "https://in-toto.io/Statement/v1");
  EXPECT_EQ(s["predicateType"], "https://slsa.dev/provenance/v1");
  ASSERT_EQ(s["subject"].size(), 2u);
  EXPECT_EQ(s["subject"][0],
            json({{"name", "hello"}, {"digest", {{"sha256", std::string(64, '0')}}}}));
  EXPECT_EQ(s["subject"][1]["annotations"]["path_b64"], "b2RkLf8uYmlu");
  const json& bd = s["predicate"]["buildDefinition"];
  EXPECT_EQ(bd["buildType"], kBuildTypeUri);
  const json& ext = bd["externalParameters"];
  EXPECT_EQ(ext["admission_sha256"], std::string(64, 'c'));
  EXPECT_EQ(ext["command"]["argv"][0], "/usr/bin/gcc");
  EXPECT_EQ(ext["command"]["cwd"], "/src");
  EXPECT_EQ(ext["env"]["LANG"], "C.UTF-8");
  EXPECT_EQ(ext["source_date_epoch"], 0);
  EXPECT_EQ(ext["limits"]["memory_max_bytes"], 8589934592);
  EXPECT_EQ(ext["containment"]["required"].size(), 3u);
  EXPECT_EQ(ext["containment"]["network"], "none");
  const json& in = bd["internalParameters"];
  EXPECT_EQ(in["grant"]["mechanism"], "bwrap");
  EXPECT_EQ(in["grant"]["mode"], "enforcing");
  EXPECT_EQ(in["outcome"], json({{"state", "built"}, {"exit", 0}, {"reason", ""}}));
  EXPECT_EQ(in["outputs"], json({{"listed", 2}, {"total", 2}}));
  EXPECT_EQ(bd["resolvedDependencies"], r["admission"]["inputs"]);
  for (const auto& d : bd["resolvedDependencies"]) {
    EXPECT_TRUE(d.contains("uri") && d["uri"].is_string() && !d["uri"].get<std::string>().empty());
    EXPECT_TRUE(d.contains("digest") && !d["digest"].empty());
  }
  const json& rd = s["predicate"]["runDetails"];
  EXPECT_EQ(rd["builder"]["id"], kBuilderEnforcing);
  EXPECT_EQ(rd["builder"]["version"], json({{"sealrun", "0.2.0+" + std::string(40, 'd')}}));
  EXPECT_EQ(rd["metadata"]["invocationId"], "run-42");
  EXPECT_EQ(rd["metadata"]["startedOn"], "2026-01-02T03:04:05.678Z");
  EXPECT_EQ(rd["metadata"]["finishedOn"], "2026-01-02T03:04:09.001Z");
  EXPECT_EQ(rd["byproducts"][0], json({{"name", "receipt.json"},
                                       {"digest", {{"sha256", std::string(64, '9')}}},
                                       {"mediaType", kReceiptPayloadType}}));
  EXPECT_EQ(rd["byproducts"][1]["name"], "job.stdout");
}

TEST(Provenance, ReportOnlyRunHasItsOwnBuilderId) {
  json r = sample_receipt();
  r["grant"]["mode"] = "report-only";
  EXPECT_EQ(statement_of(r)["predicate"]["runDetails"]["builder"]["id"], kBuilderReportOnly);
}

TEST(Provenance, FailedReceiptIsRefusedUnlessIncludeFailed) {
  json r = sample_receipt();
  r["state"] = "failed";
  r["exit"] = 5;
  r["reason"] = "the job was OOM-killed (memory.max)";
  std::string why = refusal(r);
  EXPECT_NE(why.find("the receipt's state is failed (exit 5): only a built receipt exports"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("--include-failed"), std::string::npos);

  json s = statement_of(r, {true});
  const json& outcome = s["predicate"]["buildDefinition"]["internalParameters"]["outcome"];
  EXPECT_EQ(outcome["state"], "failed");
  EXPECT_EQ(outcome["exit"], 5);
  EXPECT_EQ(outcome["reason"], "the job was OOM-killed (memory.max)");
  EXPECT_EQ(s["predicate"]["runDetails"]["builder"]["id"], kBuilderUnsuccessful);

  r["state"] = "not_run";
  r["grant"] = nullptr;
  EXPECT_NE(refusal(r).find("state is not_run"), std::string::npos);
  json n = statement_of(r, {true});
  EXPECT_FALSE(n["predicate"]["buildDefinition"]["internalParameters"].contains("grant"));
  EXPECT_EQ(n["predicate"]["runDetails"]["builder"]["id"], kBuilderUnsuccessful);
}

TEST(Provenance, RefusalsNameTheField) {
  struct Case {
    const char* why;
    void (*edit)(json&);
  };
  const Case cases[] = {
      {"receipt.admission: missing", [](json& r) { r.erase("admission"); }},
      {"receipt.sealrun_version: missing", [](json& r) { r.erase("sealrun_version"); }},
      {"receipt.outputs[0].sha256: not 64", [](json& r) { r["outputs"][0]["sha256"] = "abc"; }},
      {"is listed twice", [](json& r) { r["outputs"][1]["path"] = "hello"; }},
      {"receipt.outputs[1].path_b64: bad base64",
       [](json& r) { r["outputs"][1]["path_b64"] = "!!"; }},
      {"receipt.admission.inputs[2]: no uri",
       [](json& r) { r["admission"]["inputs"][2].erase("uri"); }},
      {"receipt.admission.inputs[0]: no digest",
       [](json& r) { r["admission"]["inputs"][0]["digest"] = json::object(); }},
      {"receipt.admission.sha256: differs",
       [](json& r) { r["admission_sha256"] = std::string(64, 'e'); }},
      {"receipt.admission.env.PATH: expected a string",
       [](json& r) { r["admission"]["env"]["PATH"] = 1; }},
      {"receipt.admission.command.argv", [](json& r) { r["admission"]["command"].erase("argv"); }},
      {"receipt.schema", [](json& r) { r["schema"] = "other"; }},
      {"receipt.started: \"yesterday\" is not an RFC 3339 UTC time",
       [](json& r) { r["started"] = "yesterday"; }},
      {"receipt.state: \"success\"", [](json& r) { r["state"] = "success"; }},
      {"receipt.reason: expected a string", [](json& r) { r["reason"] = 5; }},
      {"receipt.admission_sha256: expected a string", [](json& r) { r["admission_sha256"] = 7; }},
      {"receipt.finished: expected a string", [](json& r) { r["finished"] = json::array(); }},
      {"receipt.grant.enforced: expected an array", [](json& r) { r["grant"]["enforced"] = "x"; }},
      {"receipt: not a JSON object", [](json& r) { r = json::array(); }},
  };
  for (const auto& c : cases) {
    json r = sample_receipt();
    c.edit(r);
    std::string why = refusal(r);
    EXPECT_NE(why.find(c.why), std::string::npos) << c.why << " -> " << why;
  }
}

// Most failed builds leave no output: the Statement is then about the receipt itself (its file's
// digest), and a symlink output, which has no digest, is no subject.
TEST(Provenance, ARunWithoutOutputFilesExportsTheReceiptAsItsSubject) {
  json r = sample_receipt();
  r["state"] = "failed";
  r["exit"] = 5;
  r["reason"] = "the job exited 1";
  r["outputs"] = json::array({{{"path", "link"}, {"kind", "symlink"}, {"target", "."}}});
  json s = statement_of(r, {true});
  EXPECT_EQ(
      s["subject"],
      json::array({{{"name", "receipt.json"}, {"digest", {{"sha256", std::string(64, '9')}}}}}));
  r["outputs"] = json::array();
  EXPECT_EQ(statement_of(r, {true})["subject"][0]["name"], "receipt.json");
  EXPECT_NE(refusal(r).find("state is failed"), std::string::npos) << "still only when asked";
}

TEST(Provenance, TruncatedOutputListIsRecorded) {
  json r = sample_receipt();
  r["outputs_total"] = 5000;
  r["outputs_list_sha256"] = std::string(64, '1');
  json s = statement_of(r);
  EXPECT_EQ(s["predicate"]["buildDefinition"]["internalParameters"]["outputs"],
            json({{"listed", 2}, {"total", 5000}, {"list_sha256", std::string(64, '1')}}));
}

TEST(Provenance, ExportFromBytesUsesTheFileDigest) {
  std::string bytes = receipt_bytes(sample_receipt());
  auto text = export_statement(bytes, {});
  ASSERT_TRUE(text) << text.error().message();
  json s = json::parse(*text);
  EXPECT_EQ(s["predicate"]["runDetails"]["byproducts"][0]["digest"]["sha256"],
            sha256_hex_of(bytes));
  EXPECT_FALSE(export_statement("{not json", {}));
  EXPECT_FALSE(export_statement(std::string(2 * 1024 * 1024, ' '), {}));
}

TEST(Provenance, SignedExportIsAnInTotoEnvelopeOfTheSameStatement) {
  sealrun::testing::TempDir tmp;
  ASSERT_TRUE(generate_key_pair(tmp.str()));
  auto key = load_signing_key(tmp / "sealrun.key");
  ASSERT_TRUE(key);
  std::string bytes = receipt_bytes(sample_receipt());
  auto env_text = export_signed_statement(bytes, {}, *key);
  ASSERT_TRUE(env_text) << env_text.error().message();
  auto env = parse_envelope(*env_text, "e");
  ASSERT_TRUE(env);
  auto v = verify_envelope(*env, key->public_key(), kInTotoPayloadType);
  ASSERT_TRUE(v) << v.error().message();
  EXPECT_EQ(json::parse(v->payload), json::parse(*export_statement(bytes, {})));
  json failed = sample_receipt();
  failed["state"] = "failed";
  EXPECT_FALSE(export_signed_statement(receipt_bytes(failed), {}, *key));
}

}  // namespace
}  // namespace sealrun::attest
