// SPDX-License-Identifier: Apache-2.0
// Unit tests of the admission schema: a valid document and its defaults, the canonical form, and
// one table row per rejection, each checking that the message names the offending field.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "admission/document.h"
#include "admission/freeze.h"
#include "admission/path_rules.h"

namespace sealrun::admission {
namespace {

using nlohmann::json;

const std::string kA(64, 'a');
const std::string kB(64, 'b');
const std::string kC(64, 'c');

json valid_doc() {
  return {{"schema", "sealrun-admission-v1"},
          {"command", {{"argv", {"/usr/bin/make", "all"}}}},
          {"source",
           {{"kind", "tree"},
            {"path", "/srv/src"},
            {"manifest",
             {{{"path", "a.c"}, {"bytes", 3}, {"sha256", kA}},
              {{"path", "sub/b.c"}, {"bytes", 4}, {"sha256", kA}}}},
            {"manifest_sha256", kB}}},
          {"toolchain", {{"root", "/opt/tc"}, {"tree_sha256", kC}}}};
}

TEST(AdmissionParse, ValidDocumentGetsTheMissionDefaults) {
  auto doc = parse_admission_json(valid_doc());
  ASSERT_TRUE(doc.ok()) << doc.error().message();
  EXPECT_EQ(doc->command.cwd, "/src");
  EXPECT_EQ(doc->toolchain->mount_path, "/opt/tc");
  EXPECT_EQ(doc->limits.memory_high_bytes, 7 * kGiB);
  EXPECT_EQ(doc->limits.memory_max_bytes, 8 * kGiB);
  EXPECT_EQ(doc->limits.swap_max_bytes, 0u);
  EXPECT_EQ(doc->limits.outer_s, 1800u);
  EXPECT_EQ(doc->limits.wall_clock_s, 1500u);
  EXPECT_EQ(doc->limits.owned_max_bytes, 8 * kGiB);
  EXPECT_EQ(doc->limits.result_max_bytes, 1 * kGiB);
  EXPECT_EQ(doc->limits.free_min_bytes, 1 * kGiB);
  EXPECT_EQ(doc->limits.census_interval_ms, 5000u);
  EXPECT_EQ(doc->limits.receipt_max_bytes, 1024u * 1024);
  EXPECT_EQ(doc->containment.required, DimensionSet::all());
  EXPECT_EQ(doc->containment.network, "none");
  EXPECT_EQ(doc->mounts.output, "/out");
  EXPECT_EQ(doc->mounts.scratch, "/scratch");
  EXPECT_FALSE(doc->image.has_value());
  ASSERT_EQ(doc->source.manifest.size(), 2u);
  EXPECT_EQ(doc->source.manifest[1].path, "sub/b.c");
}

TEST(AdmissionParse, CanonicalBytesAreStableAndReadBackAsThemselves) {
  json j = valid_doc();
  j["limits"] = {{"pids_max", 77}};
  j["env"] = {{"LANG", "C.UTF-8"}, {"CC", "gcc"}};
  j["expires_at"] = "2099-01-01T00:00:00Z";
  j["reference"] = {{"value", "https://review.example/42"},
                    {"pattern", "https://review\\.example/[0-9]+"}};
  auto doc = parse_admission_json(j);
  ASSERT_TRUE(doc.ok()) << doc.error().message();
  std::string once = canonical_admission_bytes(*doc);
  auto again = parse_admission_bytes(once);
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_EQ(canonical_admission_bytes(*again), once);
  EXPECT_EQ(again->limits.pids_max, 77u);
  EXPECT_EQ(again->env.at("CC"), "gcc");
  // Keys in sorted order: "command" before "containment" before "env".
  EXPECT_LT(once.find("\"command\""), once.find("\"containment\""));
  EXPECT_LT(once.find("\"containment\""), once.find("\"env\""));
  EXPECT_EQ(once.back(), '\n');
}

TEST(AdmissionParse, WritableSourceIsOptInAndWrittenOnlyWhenSet) {
  auto plain = parse_admission_json(valid_doc());
  ASSERT_TRUE(plain.ok()) << plain.error().message();
  EXPECT_FALSE(plain->mounts.source_writable);
  EXPECT_EQ(plain->mounts.outputs_from, OutputsFrom::kOutput);
  // Absent by default, so admissions frozen before the keys existed keep their bytes.
  std::string plain_bytes = canonical_admission_bytes(*plain);
  EXPECT_EQ(plain_bytes.find("source_writable"), std::string::npos);
  EXPECT_EQ(plain_bytes.find("outputs_from"), std::string::npos);

  json j = valid_doc();
  j["mounts"] = {{"source_writable", true}, {"outputs_from", "source"}};
  auto doc = parse_admission_json(j);
  ASSERT_TRUE(doc.ok()) << doc.error().message();
  EXPECT_TRUE(doc->mounts.source_writable);
  EXPECT_EQ(doc->mounts.outputs_from, OutputsFrom::kSource);
  std::string bytes = canonical_admission_bytes(*doc);
  EXPECT_NE(bytes.find("\"source_writable\": true"), std::string::npos) << bytes;
  EXPECT_NE(bytes.find("\"outputs_from\": \"source\""), std::string::npos) << bytes;
  auto again = parse_admission_bytes(bytes);
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_EQ(canonical_admission_bytes(*again), bytes);

  // A writable source alone still collects from the output mount.
  j["mounts"] = {{"source_writable", true}};
  auto writable = parse_admission_json(j);
  ASSERT_TRUE(writable.ok()) << writable.error().message();
  EXPECT_EQ(writable->mounts.outputs_from, OutputsFrom::kOutput);
}

struct Rejection {
  const char* name;
  std::function<void(json&)> mutate;
  const char* message;  // must appear in the error
};

void PrintTo(const Rejection& r, std::ostream* os) { *os << r.name; }

class AdmissionRejects : public ::testing::TestWithParam<Rejection> {};

TEST_P(AdmissionRejects, NamesTheField) {
  json j = valid_doc();
  GetParam().mutate(j);
  auto doc = parse_admission_json(j);
  ASSERT_FALSE(doc.ok()) << "accepted: " << j.dump();
  EXPECT_NE(doc.error().message().find(GetParam().message), std::string::npos)
      << doc.error().message();
}

const Rejection kRejections[] = {
    {"not_an_object", [](json& j) { j = json::array(); }, "document: expected an object"},
    {"unknown_top_key", [](json& j) { j["colour"] = "blue"; }, "colour: unknown key"},
    {"unknown_limit",
     [](json& j) {
       j["limits"] = {{"memory_maxx_bytes", 1}};
     },
     "limits.memory_maxx_bytes: unknown key"},
    {"unknown_nested", [](json& j) { j["toolchain"]["extra"] = 1; },
     "toolchain.extra: unknown key"},
    {"missing_command", [](json& j) { j.erase("command"); }, "command: missing (required)"},
    {"missing_schema", [](json& j) { j.erase("schema"); }, "schema: missing (required)"},
    {"wrong_schema", [](json& j) { j["schema"] = "sealrun-admission-v0"; },
     "schema: unsupported schema"},
    {"limit_is_string",
     [](json& j) {
       j["limits"] = {{"memory_max_bytes", "8G"}};
     },
     "limits.memory_max_bytes: expected a positive integer, got a string"},
    {"limit_is_float",
     [](json& j) {
       j["limits"] = {{"pids_max", 1.5}};
     },
     "limits.pids_max: expected a positive integer, got a fractional number"},
    {"limit_two_to_the_64",
     [](json& j) {
       // What the JSON reader makes of 18446744073709551616: a float, yet a whole number.
       j["limits"] = {{"memory_max_bytes", 18446744073709551616.0}};
     },
     "got a number out of range (about 1.84e+19)"},
    {"limit_negative",
     [](json& j) {
       j["limits"] = {{"swap_max_bytes", -1}};
     },
     "limits.swap_max_bytes: expected an integer between 0 and"},
    {"limit_bool",
     [](json& j) {
       j["limits"] = {{"outer_s", true}};
     },
     "limits.outer_s: expected a positive integer, got a boolean"},
    {"limit_too_small",
     [](json& j) {
       j["limits"] = {{"census_interval_ms", 1}};
     },
     "limits.census_interval_ms: expected an integer between 100 and"},
    {"receipt_over_1mib",
     [](json& j) {
       j["limits"] = {{"receipt_max_bytes", 2 << 20}};
     },
     "limits.receipt_max_bytes"},
    {"high_above_max",
     [](json& j) {
       j["limits"] = {{"memory_high_bytes", 9 * kGiB}};
     },
     "limits.memory_high_bytes: 9663676416 is above limits.memory_max_bytes"},
    {"inner_not_below_outer",
     [](json& j) {
       j["limits"] = {{"wall_clock_s", 1800}};
     },
     "limits.wall_clock_s"},
    {"argv_not_array", [](json& j) { j["command"]["argv"] = "make all"; },
     "command.argv: expected an array, got a string"},
    {"argv_empty", [](json& j) { j["command"]["argv"] = json::array(); },
     "command.argv: must name"},
    {"argv_element_int", [](json& j) { j["command"]["argv"][1] = 3; },
     "command.argv[1]: expected a string, got an integer"},
    {"cwd_relative", [](json& j) { j["command"]["cwd"] = "src"; },
     "command.cwd: \"src\" is relative"},
    {"toolchain_relative", [](json& j) { j["toolchain"]["root"] = "usr/lib/gcc"; },
     "toolchain.root: \"usr/lib/gcc\" is relative; an absolute path is required"},
    {"dotdot_in_path", [](json& j) { j["source"]["path"] = "/srv/../etc"; },
     "source.path: \"/srv/../etc\" has a \"..\" component"},
    {"dot_in_path", [](json& j) { j["toolchain"]["root"] = "/opt/./tc"; },
     "toolchain.root: \"/opt/./tc\" has a \".\" component"},
    {"double_slash", [](json& j) { j["toolchain"]["root"] = "/opt//tc"; }, "toolchain.root"},
    {"trailing_slash", [](json& j) { j["toolchain"]["root"] = "/opt/tc/"; }, "toolchain.root"},
    {"control_char_path", [](json& j) { j["toolchain"]["root"] = "/opt/t\nc"; },
     "toolchain.root: contains a control character"},
    {"manifest_escape", [](json& j) { j["source"]["manifest"][0]["path"] = "../../etc/passwd"; },
     "source.manifest[0].path: \"../../etc/passwd\" has a \"..\" component"},
    {"manifest_absolute", [](json& j) { j["source"]["manifest"][0]["path"] = "/etc/passwd"; },
     "source.manifest[0].path: \"/etc/passwd\" is absolute"},
    {"manifest_unsorted", [](json& j) { j["source"]["manifest"][1]["path"] = "0.c"; },
     "source.manifest[1].path: \"0.c\" is out of order or repeated"},
    {"manifest_duplicate", [](json& j) { j["source"]["manifest"][1]["path"] = "a.c"; },
     "source.manifest[1].path: \"a.c\" is out of order or repeated"},
    {"manifest_extra_key", [](json& j) { j["source"]["manifest"][0]["mode"] = 420; },
     "source.manifest[0].mode: unknown key"},
    {"short_sha256", [](json& j) { j["toolchain"]["tree_sha256"] = kA.substr(1); },
     "toolchain.tree_sha256: expected a SHA-256 as 64 lower-case hex digits"},
    {"upper_sha256", [](json& j) { j["source"]["manifest_sha256"] = std::string(64, 'A'); },
     "source.manifest_sha256: expected a SHA-256"},
    {"source_bad_kind", [](json& j) { j["source"]["kind"] = "svn"; },
     "source.kind: expected \"git\", \"bundle\" or \"tree\", got \"svn\""},
    {"git_without_commit", [](json& j) { j["source"]["kind"] = "git"; },
     "source.commit: missing (required)"},
    {"git_with_bundle_digest",
     [](json& j) {
       j["source"]["kind"] = "git";
       j["source"]["commit"] = std::string(40, 'a');
       j["source"]["tree"] = std::string(40, 'b');
       j["source"]["path_sha256"] = kA;
     },
     "source.path_sha256: unknown key"},
    {"short_commit",
     [](json& j) {
       j["source"]["kind"] = "git";
       j["source"]["commit"] = "abc123";
       j["source"]["tree"] = std::string(40, 'b');
     },
     "source.commit: expected a git object id"},
    {"image_id_unprefixed",
     [](json& j) {
       j["image"] = {{"archive", "/img.tar"},
                     {"archive_sha256", kA},
                     {"image_id", kB},
                     {"diff_ids", json::array()}};
     },
     "image.image_id: expected \"sha256:\""},
    {"host_tool_relative",
     [](json& j) {
       j["host_tools"] = {{{"path", "bwrap"}, {"sha256", kA}}};
     },
     "host_tools[0].path: \"bwrap\" is relative"},
    {"host_tool_twice",
     [](json& j) {
       j["host_tools"] = {{{"path", "/usr/bin/bwrap"}, {"sha256", kA}},
                          {{"path", "/usr/bin/bwrap"}, {"sha256", kA}}};
     },
     "host_tools[1].path: \"/usr/bin/bwrap\" is listed twice"},
    {"env_bad_name",
     [](json& j) {
       j["env"] = {{"1X", "y"}};
     },
     "env.1X: not a variable name"},
    {"env_sde",
     [](json& j) {
       j["env"] = {{"SOURCE_DATE_EPOCH", "1"}};
     },
     "env.SOURCE_DATE_EPOCH: set by source_date_epoch"},
    {"env_value_int",
     [](json& j) {
       j["env"] = {{"N", 1}};
     },
     "env.N: expected a string, got an integer"},
    {"sde_string", [](json& j) { j["source_date_epoch"] = "0"; },
     "source_date_epoch: expected a non-negative integer, got a string"},
    {"unknown_dimension",
     [](json& j) {
       j["containment"] = {{"required", {"memory", "magic"}}};
     },
     "containment.required[1]: unknown dimension \"magic\""},
    {"dimension_twice",
     [](json& j) {
       j["containment"] = {{"required", {"memory", "memory"}}};
     },
     "containment.required[1]: \"memory\" is listed twice"},
    {"network_host",
     [](json& j) {
       j["containment"] = {{"network", "host"}};
     },
     "containment.network: only \"none\""},
    {"mechanism_docker",
     [](json& j) {
       j["containment"] = {{"mechanism", "docker"}};
     },
     "containment.mechanism: expected \"auto\" or one of bwrap, podman"},
    {"mount_overlap",
     [](json& j) {
       j["mounts"] = {{"output", "/src/out"}};
     },
     "mounts.output: \"/src/out\" overlaps mounts.source"},
    {"toolchain_mount_over_tmp", [](json& j) { j["toolchain"]["mount_path"] = "/tmp/tc"; },
     "toolchain.mount_path: \"/tmp/tc\" overlaps mounts.tmp"},
    {"mount_root",
     [](json& j) {
       j["mounts"] = {{"scratch", "/"}};
     },
     "mounts.scratch: cannot be"},
    {"source_writable_not_bool",
     [](json& j) {
       j["mounts"] = {{"source_writable", "yes"}};
     },
     "mounts.source_writable: expected a boolean, got a string"},
    {"outputs_from_unknown",
     [](json& j) {
       j["mounts"] = {{"source_writable", true}, {"outputs_from", "scratch"}};
     },
     "mounts.outputs_from: expected \"output\" or \"source\""},
    {"outputs_from_read_only_source",
     [](json& j) {
       j["mounts"] = {{"outputs_from", "source"}};
     },
     "mounts.outputs_from: \"source\" needs mounts.source_writable"},
    {"expiry_not_rfc3339", [](json& j) { j["expires_at"] = "tomorrow"; },
     "expires_at: expected an RFC 3339 time"},
    {"expiry_feb_30", [](json& j) { j["expires_at"] = "2030-02-30T00:00:00Z"; }, "expires_at"},
    {"reference_mismatch",
     [](json& j) {
       j["reference"] = {{"value", "https://evil.example/1"},
                         {"pattern", "https://review\\.example/[0-9]+"}};
     },
     "reference.value: \"https://evil.example/1\" does not match reference.pattern"},
    {"reference_bad_regex",
     [](json& j) {
       j["reference"] = {{"value", "x"}, {"pattern", "(x"}};
     },
     "reference.pattern: not a usable regular expression"},
    {"reference_backref",
     [](json& j) {
       j["reference"] = {{"value", "aa"}, {"pattern", "(a)\\1"}};
     },
     "reference.pattern: not a usable regular expression"},
    {"reference_value_long",
     [](json& j) {
       j["reference"] = {{"value", std::string(5000, 'a')}, {"pattern", "a*"}};
     },
     "reference.value: longer than"},
};

INSTANTIATE_TEST_SUITE_P(Table, AdmissionRejects, ::testing::ValuesIn(kRejections),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(AdmissionParse, ReportsEveryProblemAtOnce) {
  json j = valid_doc();
  j["colour"] = 1;
  j["toolchain"]["root"] = "rel";
  j["limits"] = {{"pids_max", "many"}};
  auto doc = parse_admission_json(j);
  ASSERT_FALSE(doc.ok());
  std::string m = doc.error().message();
  EXPECT_NE(m.find("colour: unknown key"), std::string::npos) << m;
  EXPECT_NE(m.find("toolchain.root"), std::string::npos) << m;
  EXPECT_NE(m.find("limits.pids_max"), std::string::npos) << m;
}

TEST(AdmissionParse, PathOverlapIsByComponent) {
  EXPECT_TRUE(paths_overlap("/a", "/a/b"));
  EXPECT_TRUE(paths_overlap("/a/b", "/a"));
  EXPECT_TRUE(paths_overlap("/a", "/a"));
  EXPECT_FALSE(paths_overlap("/a", "/ab"));
  EXPECT_FALSE(paths_overlap("/src", "/scratch"));
}

TEST(AdmissionParse, Rfc3339) {
  EXPECT_EQ(parse_rfc3339("1970-01-01T00:00:00Z"), time_t{0});
  EXPECT_EQ(parse_rfc3339("1970-01-01T01:00:00+01:00"), time_t{0});
  EXPECT_EQ(parse_rfc3339("1970-01-01T00:00:10.250Z"), time_t{10});
  EXPECT_EQ(parse_rfc3339("2026-11-30T01:02:03-00:30"), parse_rfc3339("2026-11-30T01:32:03Z"));
  EXPECT_FALSE(parse_rfc3339("2026-11-30 01:02:03Z"));
  EXPECT_FALSE(parse_rfc3339("2026-11-30T01:02:03"));
  EXPECT_FALSE(parse_rfc3339("2026-13-01T00:00:00Z"));
  EXPECT_FALSE(parse_rfc3339("2026-11-30T01:02:03Zjunk"));
}

TEST(AdmissionSet, DottedKeysTypedValues) {
  json j = json::object();
  ASSERT_TRUE(apply_set(&j, "limits.memory_max_bytes=67108864").ok());
  ASSERT_TRUE(apply_set(&j, "command.cwd=/src/sub").ok());
  ASSERT_TRUE(apply_set(&j, "containment.required=[\"memory\",\"network\"]").ok());
  ASSERT_TRUE(apply_set(&j, "reference.value=\"123\"").ok());
  EXPECT_EQ(j["limits"]["memory_max_bytes"], 67108864);
  EXPECT_EQ(j["command"]["cwd"], "/src/sub");
  EXPECT_EQ(j["containment"]["required"].size(), 2u);
  EXPECT_EQ(j["reference"]["value"], "123");
  EXPECT_FALSE(apply_set(&j, "noequals").ok());
  EXPECT_FALSE(apply_set(&j, "limits..x=1").ok());
  EXPECT_FALSE(apply_set(&j, "command.cwd.deeper=1").ok());  // cwd is a string, not an object
}

}  // namespace
}  // namespace sealrun::admission
