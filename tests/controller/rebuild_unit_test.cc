// SPDX-License-Identifier: Apache-2.0
// The pure parts of `sealrun rebuild` (issue 13): --vary parsing, how variations change the
// containment spec, and the path-wise output comparison that rebuild and `receipt diff` share.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "controller/receipt/output_compare.h"
#include "controller/run/variations.h"

namespace sealrun {
namespace {

using nlohmann::json;

TEST(RebuildVariations, ParsesReprotestNamesAndRefusesOthers) {
  auto v = run::parse_variations("hostname,,umask");
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->hostname && v->umask);
  EXPECT_FALSE(v->locale || v->timezone || v->build_path || v->num_cpus || v->user_id);
  auto all = run::parse_variations("all");
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all->hostname && all->umask && all->locale && all->timezone && all->build_path &&
              all->num_cpus && all->user_id);
  EXPECT_FALSE(run::parse_variations("")->any());
  auto bad = run::parse_variations("hostname,kernal");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("\"kernal\""), std::string::npos);
}

TEST(RebuildVariations, ApplyChangesOnlyWhatIsAsked) {
  ContainmentSpec base;
  base.cwd = "/src/sub";
  base.env = {{"PATH", "/bin"}};
  base.mounts = {{"/h/src", "/src", MountSpec::Access::kReadOnly},
                 {"/h/out", "/out", MountSpec::Access::kWritable},
                 {"/h/scratch", "/scratch", MountSpec::Access::kWritable},
                 {"/h/srcx", "/srcx", MountSpec::Access::kReadOnly}};
  ContainmentSpec s = base;
  run::apply_variations({}, "/src", s);
  EXPECT_EQ(s.hostname, "sealrun");
  EXPECT_FALSE(s.umask || s.uid_in_job);
  EXPECT_EQ(s.env, base.env);
  EXPECT_EQ(s.cwd, "/src/sub");

  run::Variations v = *run::parse_variations("all");
  v.base_umask = 0022;
  run::apply_variations(v, "/src", s);
  EXPECT_EQ(s.hostname, "sealrun-rebuild");
  EXPECT_EQ(s.umask, 0002u);
  EXPECT_EQ(s.uid_in_job, 4242u);
  EXPECT_EQ(s.env["TZ"], "GMT-14");
  EXPECT_EQ(s.env["LC_ALL"], "fr_CH.UTF-8");
  EXPECT_EQ(s.env["PATH"], "/bin:/.sealrun-rebuild-path");  // exec_path
  EXPECT_EQ(s.cwd, "/build/sealrun-rebuild/src/sub");
  EXPECT_EQ(s.mounts[0].target, "/build/sealrun-rebuild/src");
  EXPECT_EQ(s.mounts[1].target, "/out");
  EXPECT_EQ(s.mounts[2].target, "/scratch");  // no kind given: not the scratch mount
  EXPECT_EQ(s.mounts[3].target, "/srcx");     // a sibling with the same prefix is not below /src
  EXPECT_EQ(run::varied_umask(0002), 0022u);  // always differs from the controller's
  EXPECT_EQ(run::describe_variations(v).size(), 14u);
}

TEST(RebuildCompare, MatchesByRawPathAndNamesEachChange) {
  std::vector<json> a = {
      {{"path", "same"}, {"size", 1}, {"sha256", "aa"}},
      {{"path", "changed"}, {"size", 1}, {"sha256", "aa"}},
      {{"path", "gone"}, {"size", 1}, {"sha256", "aa"}},
      {{"path", "link"}, {"kind", "symlink"}, {"target", "x"}},
      {{"path", "l\\xff"}, {"path_b64", "bP8="}, {"size", 1}, {"sha256", "aa"}},
  };
  std::vector<json> b = {
      {{"path", "new"}, {"size", 1}, {"sha256", "bb"}},
      {{"path", "same"}, {"size", 1}, {"sha256", "aa"}},
      {{"path", "changed"}, {"size", 2}, {"sha256", "bb"}},
      {{"path", "link"}, {"kind", "symlink"}, {"target", "y"}},
      {{"path", "l\\xff"}, {"path_b64", "bP8="}, {"size", 1}, {"sha256", "aa"}},
  };
  auto changes = receipt::compare_outputs(a, b);
  ASSERT_EQ(changes.size(), 4u);
  std::map<std::string, std::string> got;
  for (const auto& c : changes) got[c.name] = std::string(receipt::change_kind_name(c.kind));
  EXPECT_EQ(
      got,
      (std::map<std::string, std::string>{
          {"changed", "changed"}, {"gone", "removed"}, {"link", "changed"}, {"new", "added"}}));
  EXPECT_TRUE(receipt::compare_outputs(a, a).empty());
  for (const auto& c : changes) {
    if (c.name == "link") {
      EXPECT_NE(receipt::change_text(c).find("symlink to x → symlink to y"), std::string::npos)
          << receipt::change_text(c);
    }
  }
  // A hostile record (wrong types) is shown, never thrown on.
  std::vector<json> odd = {{{"path", "changed"}, {"size", "big"}, {"sha256", 7}}};
  auto weird = receipt::compare_outputs(a, odd);
  for (const auto& c : weird) EXPECT_FALSE(receipt::change_text(c).empty());
}

TEST(RebuildCompare, AListWithoutFileIsUsedOnlyWhenComplete) {
  json complete = {{"state", "built"},
                   {"outputs", json::array({{{"path", "a"}, {"size", 1}, {"sha256", "aa"}}})},
                   {"outputs_total", 1},
                   {"outputs_list_sha256", std::string(64, '0')}};
  auto lenient = receipt::load_output_list("/nonexistent/receipt.json", complete, true);
  ASSERT_TRUE(lenient.ok());
  EXPECT_EQ(lenient->size(), 1u);
  auto strict = receipt::load_output_list("/nonexistent/receipt.json", complete, false);
  ASSERT_FALSE(strict.ok());
  EXPECT_NE(strict.error().message().find("outputs.jsonl"), std::string::npos);
  json none = {{"state", "not_run"},
               {"outputs", json::array()},
               {"outputs_total", nullptr},
               {"outputs_list_sha256", nullptr}};
  EXPECT_TRUE(receipt::load_output_list("/x/receipt.json", none, true)->empty());
  auto refused = receipt::load_output_list("/x/receipt.json", none, false);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("records no output list"), std::string::npos);
}

}  // namespace
}  // namespace sealrun
