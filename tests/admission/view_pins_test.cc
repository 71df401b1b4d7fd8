// SPDX-License-Identifier: Apache-2.0
// Unit tests of the view's pins in an admission (admission/parse_view.h): trees, host_files and
// host_links parse, round-trip through the canonical bytes (and are absent from them when empty),
// and every misplaced entry is refused with a message naming the field and the place it collides
// with.
#include <gtest/gtest.h>

#include <string>

#include "admission/document.h"

namespace sealrun::admission {
namespace {

using nlohmann::json;

const std::string kA(64, 'a');

json base_doc() {
  return {{"schema", "sealrun-admission-v1"},
          {"command", {{"argv", {"/bin/sh", "-c", "true"}}}},
          {"source",
           {{"kind", "tree"},
            {"path", "/srv/src"},
            {"manifest", json::array()},
            {"manifest_sha256", kA}}},
          {"toolchain", {{"root", "/opt/tc"}, {"tree_sha256", kA}}}};
}

TEST(AdmissionViewPins, ParseAndRoundTrip) {
  json j = base_doc();
  j["trees"] = {{{"host_path", "/usr"}, {"job_path", "/usr"}, {"tree_sha256", kA}},
                {{"host_path", "/srv/bb"}, {"job_path", "/bin"}, {"tree_sha256", kA}}};
  j["host_files"] = {{{"path", "/etc/ld.so.cache"}, {"sha256", kA}}};
  j["host_links"] = {{{"path", "/lib64"}, {"target", "usr/lib64"}}};
  auto doc = parse_admission_json(j);
  ASSERT_TRUE(doc.ok()) << doc.error().message();
  ASSERT_EQ(doc->trees.size(), 2u);
  EXPECT_EQ(doc->trees[1].job_path, "/bin");
  ASSERT_EQ(doc->host_files.size(), 1u);
  ASSERT_EQ(doc->host_links.size(), 1u);
  EXPECT_EQ(doc->host_links[0].target, "usr/lib64");
  std::string bytes = canonical_admission_bytes(*doc);
  auto again = parse_admission_bytes(bytes);
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_EQ(canonical_admission_bytes(*again), bytes);
  EXPECT_NE(bytes.find("\"trees\""), std::string::npos);
}

TEST(AdmissionViewPins, AbsentWhenEmptySoOldAdmissionsKeepTheirBytes) {
  auto doc = parse_admission_json(base_doc());
  ASSERT_TRUE(doc.ok());
  std::string bytes = canonical_admission_bytes(*doc);
  for (const char* key : {"\"trees\"", "\"host_files\"", "\"host_links\""})
    EXPECT_EQ(bytes.find(key), std::string::npos) << key;
}

struct Bad {
  const char* name;
  json trees;
  json files;
  json links;
  const char* expect;  // in the message
};

TEST(AdmissionViewPins, MisplacedEntriesAreRefusedByName) {
  auto tree = [](const char* host, const char* job) {
    return json{{"host_path", host}, {"job_path", job}, {"tree_sha256", kA}};
  };
  const Bad cases[] = {
      {"root host", {tree("/", "/x")}, nullptr, nullptr, "trees[0].host_path: \"/\""},
      {"proc host", {tree("/proc", "/x")}, nullptr, nullptr, "/proc"},
      {"below proc host", {tree("/proc/self", "/x")}, nullptr, nullptr, "trees[0].host_path"},
      {"root job", {tree("/a", "/")}, nullptr, nullptr, "trees[0].job_path: cannot be \"/\""},
      {"on /src", {tree("/a", "/src")}, nullptr, nullptr, "overlaps mounts.source"},
      {"below /out", {tree("/a", "/out/x")}, nullptr, nullptr, "overlaps mounts.output"},
      {"above /scratch", {tree("/a", "/scratch")}, nullptr, nullptr, "overlaps mounts.scratch"},
      {"on /tmp", {tree("/a", "/tmp")}, nullptr, nullptr, "overlaps mounts.tmp"},
      {"on /proc", {tree("/a", "/proc")}, nullptr, nullptr, "/proc"},
      {"on /dev", {tree("/a", "/dev/x")}, nullptr, nullptr, "/dev"},
      {"over toolchain", {tree("/a", "/opt")}, nullptr, nullptr, "overlaps toolchain.mount_path"},
      {"two trees",
       {tree("/a", "/data"), tree("/b", "/data/x")},
       nullptr,
       nullptr,
       "trees[1].job_path: \"/data/x\" overlaps trees[0].job_path"},
      {"file in a tree",
       {tree("/usr", "/usr")},
       {{{"path", "/usr/bin/cc"}, {"sha256", kA}}},
       nullptr,
       "host_files[0].path: \"/usr/bin/cc\" overlaps trees[0].job_path"},
      {"file below a link",
       nullptr,
       {{{"path", "/lib64/ld.so"}, {"sha256", kA}}},
       {{{"path", "/lib64"}, {"target", "usr/lib64"}}},
       "overlaps host_links[0].path"},
      {"file twice",
       nullptr,
       {{{"path", "/etc/a"}, {"sha256", kA}}, {{"path", "/etc/a"}, {"sha256", kA}}},
       nullptr,
       "listed twice"},
      {"empty link",
       nullptr,
       nullptr,
       {{{"path", "/bin"}, {"target", ""}}},
       "host_links[0].target"},
      {"relative file",
       nullptr,
       {{{"path", "etc/a"}, {"sha256", kA}}},
       nullptr,
       "host_files[0].path"},
      {"unknown key",
       {{{"host_path", "/a"}, {"job_path", "/b"}, {"tree_sha256", kA}, {"x", 1}}},
       nullptr,
       nullptr,
       "trees[0].x: unknown key"},
  };
  for (const Bad& c : cases) {
    SCOPED_TRACE(c.name);
    json j = base_doc();
    if (!c.trees.is_null()) j["trees"] = c.trees;
    if (!c.files.is_null()) j["host_files"] = c.files;
    if (!c.links.is_null()) j["host_links"] = c.links;
    auto doc = parse_admission_json(j);
    ASSERT_FALSE(doc.ok());
    EXPECT_NE(doc.error().message().find(c.expect), std::string::npos) << doc.error().message();
  }
}

}  // namespace
}  // namespace sealrun::admission
