// SPDX-License-Identifier: Apache-2.0
// inputs_from_pins: the documented mapping (docs/build-type.md, "Inputs") pin by pin, file URIs,
// and refusals of malformed pins.
#include "attest/inputs.h"

#include <gtest/gtest.h>

#include "tests/attest/sample_receipt.h"

namespace sealrun::attest {
namespace {

using nlohmann::json;

json only(const AdmissionPins& pins) {
  auto r = inputs_from_pins(pins);
  EXPECT_TRUE(r) << r.error().message();
  return r ? *r : json();
}

TEST(Inputs, FileUriPercentEncodesEverythingButUnreservedAndSlash) {
  EXPECT_EQ(file_uri("/usr/bin/bwrap"), "file:///usr/bin/bwrap");
  EXPECT_EQ(file_uri("/a b/c@d#e%f?g"), "file:///a%20b/c%40d%23e%25f%3Fg");
  EXPECT_EQ(file_uri("/caf\xc3\xa9/~x_y-z.1"), "file:///caf%C3%A9/~x_y-z.1");
}

TEST(Inputs, GitSource) {
  AdmissionPins p;
  p.source = SourcePin{
      "git", "/src/repo", std::string(40, '1'), std::string(40, '2'), std::string(64, '3'),
      "",    "/src"};
  json in = only(p);
  ASSERT_EQ(in.size(), 1u);
  EXPECT_EQ(in[0], json::parse(R"({
    "name": "source",
    "uri": "git+file:///src/repo@1111111111111111111111111111111111111111",
    "digest": {"gitCommit": "1111111111111111111111111111111111111111",
               "gitTree": "2222222222222222222222222222222222222222",
               "sealrun_sourceManifestV1":
                 "3333333333333333333333333333333333333333333333333333333333333333"},
    "annotations": {"kind": "source", "source_kind": "git", "job_path": "/src"}})"));
}

TEST(Inputs, BundleSourceIsTheCommitAndTheBundleFile) {
  AdmissionPins p;
  p.source = SourcePin{"bundle",
                       "/b/x.bundle",
                       std::string(40, '1'),
                       std::string(40, '2'),
                       std::string(64, '3'),
                       std::string(64, '4'),
                       "/src"};
  json in = only(p);
  ASSERT_EQ(in.size(), 2u);
  EXPECT_EQ(in[0]["uri"], "git+file:///b/x.bundle@" + std::string(40, '1'));
  EXPECT_EQ(in[0]["annotations"]["source_kind"], "bundle");
  EXPECT_EQ(in[1]["name"], "source-bundle");
  EXPECT_EQ(in[1]["uri"], "file:///b/x.bundle");
  EXPECT_EQ(in[1]["digest"], json({{"sha256", std::string(64, '4')}}));
}

TEST(Inputs, TreeSource) {
  AdmissionPins p;
  p.source = SourcePin{"tree", "/t", "", "", std::string(64, '3'), "", "/src"};
  json in = only(p);
  ASSERT_EQ(in.size(), 1u);
  EXPECT_EQ(in[0]["uri"], "file:///t");
  EXPECT_EQ(in[0]["digest"], json({{"sealrun_sourceManifestV1", std::string(64, '3')}}));
}

TEST(Inputs, EveryKindInOrderWithUriDigestAndKind) {
  json in = only(testing::sample_pins());
  std::vector<std::string> names;
  for (const auto& d : in) {
    names.push_back(d["name"]);
    EXPECT_FALSE(d["uri"].get<std::string>().empty());
    EXPECT_FALSE(d["digest"].empty());
    EXPECT_TRUE(d["annotations"].contains("kind"));
    EXPECT_TRUE(check_input_descriptor(d, "d"));
  }
  EXPECT_EQ(names, (std::vector<std::string>{"source", "toolchain:/usr/lib/gcc/x86_64-linux-gnu/12",
                                             "toolchain:/opt/cross", "tree:/usr/include", "image",
                                             "host_tool:/usr/bin/bwrap",
                                             "closure:/usr/lib/x86_64-linux-gnu/libc.so.6"}));
  EXPECT_EQ(in[1]["digest"], json({{"sealrun_semanticTreeV1", std::string(64, '4')}}));
  EXPECT_EQ(in[1]["annotations"]["kind"], "toolchain");
  EXPECT_EQ(in[3]["annotations"]["kind"], "tree");
  EXPECT_EQ(in[4]["digest"], json({{"sha256", std::string(64, '7')}}));
  EXPECT_EQ(in[4]["annotations"]["image_id"], "sha256:" + std::string(64, '8'));
  EXPECT_EQ(in[4]["annotations"]["diff_ids"].size(), 1u);
  EXPECT_EQ(in[5]["digest"], json({{"sha256", std::string(64, 'a')}}));
  EXPECT_EQ(in[5]["annotations"]["kind"], "host_tool");
  EXPECT_EQ(in[6]["annotations"]["kind"], "closure");
}

TEST(Inputs, MalformedPinsAreRefusedByName) {
  struct Case {
    const char* why;
    void (*edit)(AdmissionPins&);
  };
  const Case cases[] = {
      {"source.commit", [](AdmissionPins& p) { p.source->commit = "HEAD"; }},
      {"source.manifest_sha256", [](AdmissionPins& p) { p.source->manifest_sha256 = "x"; }},
      {"source.kind", [](AdmissionPins& p) { p.source->kind = "svn"; }},
      {"source.path", [](AdmissionPins& p) { p.source->path = "relative"; }},
      {"toolchains[1].tree_sha256", [](AdmissionPins& p) { p.toolchains[1].tree_sha256 = ""; }},
      {"trees[0].job_path", [](AdmissionPins& p) { p.trees[0].job_path = "x"; }},
      {"image.image_id", [](AdmissionPins& p) { p.image->image_id = std::string(64, '8'); }},
      {"image.diff_ids[0]", [](AdmissionPins& p) { p.image->diff_ids[0] = "sha256:zz"; }},
      {"host_tools[0].sha256", [](AdmissionPins& p) { p.host_tools[0].sha256 = "ABC"; }},
      {"host_files[0].path", [](AdmissionPins& p) { p.closure[0].path = ""; }},
  };
  for (const auto& c : cases) {
    auto pins = testing::sample_pins();
    c.edit(pins);
    auto r = inputs_from_pins(pins);
    ASSERT_FALSE(r) << c.why;
    EXPECT_EQ(r.error().message().rfind(c.why, 0), 0u) << r.error().message();
  }
}

TEST(Inputs, CheckDescriptorNeedsUriAndDigest) {
  EXPECT_FALSE(
      check_input_descriptor(json::parse(R"({"name":"x","digest":{"sha256":"00"}})"), "d"));
  EXPECT_FALSE(check_input_descriptor(json::parse(R"({"uri":"file:///x"})"), "d"));
  EXPECT_FALSE(check_input_descriptor(json::parse(R"({"uri":"file:///x","digest":{}})"), "d"));
  EXPECT_FALSE(
      check_input_descriptor(json::parse(R"({"uri":"file:///x","digest":{"sha256":"00"}})"), "d"));
  EXPECT_FALSE(check_input_descriptor(
      json::parse(R"({"uri":"file:///x","digest":{"gitCommit":"HEAD"}})"), "d"));
  EXPECT_TRUE(check_input_descriptor(
      json::parse(R"({"uri":"file:///x","digest":{"gitCommit":")" + std::string(40, 'a') + "\"}}"),
      "d"));
}

}  // namespace
}  // namespace sealrun::attest
