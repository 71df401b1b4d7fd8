// SPDX-License-Identifier: Apache-2.0
// `rebuild --vary`'s pure part (issue 26), table by table: every reprotest name parses (and `all`
// is all fourteen), each variation changes exactly its part of the containment spec, and each is
// described for the receipt with how it was applied and where it cannot apply.
#include "controller/run/variations.h"

#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>

namespace sealrun {
namespace {

using run::Variations;

std::set<std::string> names_of(const Variations& v) {
  std::set<std::string> out;
  for (const auto& d : run::describe_variations(v)) out.insert(d["name"].get<std::string>());
  return out;
}

TEST(Variations, ParseTable) {
  struct Case {
    const char* list;
    std::set<std::string> names;  // what is varied
    const char* error;            // a part of the error, or nullptr
  };
  std::set<std::string> all;
  for (auto n : run::kVariationNames) all.insert(std::string(n));
  const Case cases[] = {
      {"", {}, nullptr},
      {"time", {"time"}, nullptr},
      {"fileordering,kernel", {"fileordering", "kernel"}, nullptr},
      {"aslr,,exec_path,", {"aslr", "exec_path"}, nullptr},
      {"domain_host,home,home", {"domain_host", "home"}, nullptr},
      {"all", all, nullptr},
      {"umask,all", all, nullptr},
      {"kernal", {}, "unknown variation \"kernal\"; known: all, hostname"},
      {"time,environment", {}, "\"environment\""},
      {"ALL", {}, "\"ALL\""},
  };
  for (const Case& c : cases) {
    auto v = run::parse_variations(c.list);
    if (c.error != nullptr) {
      ASSERT_FALSE(v.ok()) << c.list;
      EXPECT_NE(v.error().message().find(c.error), std::string::npos) << v.error().message();
      continue;
    }
    ASSERT_TRUE(v.ok()) << c.list << ": " << v.error().message();
    EXPECT_EQ(names_of(*v), c.names) << c.list;
    EXPECT_EQ(v->any(), !c.names.empty()) << c.list;
  }
  EXPECT_EQ(all.size(), 14u);
}

ContainmentSpec base_spec() {
  ContainmentSpec s;
  s.cwd = "/scratch/x";
  s.env = {{"PATH", "/usr/bin:/bin"}, {"LD_PRELOAD", "/lib/own.so"}};
  s.mounts = {{"/h/src", "/src", MountSpec::Access::kReadOnly, ViewKind::kSource},
              {"/h/vendor", "/src/vendor", MountSpec::Access::kReadOnly, ViewKind::kTree},
              {"/h/out", "/out", MountSpec::Access::kWritable, ViewKind::kOut},
              {"/h/scratch", "/scratch", MountSpec::Access::kWritable, ViewKind::kScratch},
              {"/h/usr", "/usr", MountSpec::Access::kReadOnly, ViewKind::kTree}};
  return s;
}

const ViewEntry* entry_at(const ContainmentSpec& s, const std::string& path) {
  for (const auto& e : s.files_and_links)
    if (e.job_path == path) return &e;
  return nullptr;
}

TEST(Variations, ApplyTable) {
  struct Case {
    const char* name;
    std::function<void(const ContainmentSpec&)> check;
  };
  const Case cases[] = {
      {"time",
       [](const ContainmentSpec& s) {
         EXPECT_EQ(s.env.at("FAKETIME"), "+373d");
         EXPECT_EQ(s.env.at("LD_PRELOAD"), "/.sealrun-faketime/libfaketime.so.1:/lib/own.so");
         const ViewEntry* lib = entry_at(s, "/.sealrun-faketime/libfaketime.so.1");
         ASSERT_NE(lib, nullptr);
         EXPECT_EQ(lib->kind, ViewKind::kClosure);
         EXPECT_EQ(lib->host_path, "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1");
         EXPECT_EQ(lib->pin, "sha256:" + std::string(64, 'a'));  // pinned like every file
       }},
      {"kernel", [](const ContainmentSpec& s) { EXPECT_EQ(s.personality, 0x0020000ul); }},
      {"aslr", [](const ContainmentSpec& s) { EXPECT_EQ(s.personality, 0x0040000ul); }},
      {"exec_path",
       [](const ContainmentSpec& s) {
         EXPECT_EQ(s.env.at("PATH"), "/usr/bin:/bin:/.sealrun-rebuild-path");
         ASSERT_NE(entry_at(s, "/.sealrun-rebuild-path"), nullptr);
         EXPECT_EQ(entry_at(s, "/.sealrun-rebuild-path")->kind, ViewKind::kDir);
       }},
      {"domain_host",
       [](const ContainmentSpec& s) {
         EXPECT_EQ(s.hostname, "sealrun-rebuild");
         EXPECT_EQ(s.domainname, "sealrun-rebuild.invalid");
       }},
      {"home",
       [](const ContainmentSpec& s) {
         EXPECT_EQ(s.env.at("HOME"), "/.sealrun-rebuild-home");
         ASSERT_NE(entry_at(s, "/.sealrun-rebuild-home"), nullptr);
       }},
      {"build_path",
       [](const ContainmentSpec& s) {
         EXPECT_EQ(s.mounts[0].target, "/build/sealrun-rebuild/src");
         EXPECT_EQ(s.mounts[1].target, "/build/sealrun-rebuild/src/vendor");
         EXPECT_EQ(s.mounts[2].target, "/out");  // results are collected from it by name
         EXPECT_EQ(s.mounts[3].target, "/build/sealrun-rebuild/scratch");
         EXPECT_EQ(s.mounts[4].target, "/usr");
         EXPECT_EQ(s.cwd, "/build/sealrun-rebuild/scratch/x");
         const ViewEntry* link = entry_at(s, "/scratch");
         ASSERT_NE(link, nullptr);
         EXPECT_EQ(link->kind, ViewKind::kLink);
         EXPECT_EQ(link->link_target, "/build/sealrun-rebuild/scratch");
         // The source is bound at its admitted name too (cp -a /src copies a tree, not a link).
         EXPECT_EQ(entry_at(s, "/src"), nullptr);
         ASSERT_EQ(s.mounts.size(), base_spec().mounts.size() + 1);
         EXPECT_EQ(s.mounts.back().target, "/src");
         EXPECT_EQ(s.mounts.back().source, s.mounts[0].source);
         EXPECT_EQ(s.files_and_links.size(), 1u);  // no link for the tree inside /src
       }},
      // fileordering and num_cpus are effects outside the spec (run_fileordering.h, affinity).
      {"fileordering",
       [](const ContainmentSpec& s) {
         for (size_t i = 0; i < s.mounts.size(); ++i) {
           EXPECT_EQ(s.mounts[i].source, base_spec().mounts[i].source);
           EXPECT_EQ(s.mounts[i].target, base_spec().mounts[i].target);
         }
       }},
      {"num_cpus", [](const ContainmentSpec& s) { EXPECT_EQ(s.env, base_spec().env); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Variations v = *run::parse_variations(c.name);
    v.faketime_sha256 = std::string(64, 'a');
    ContainmentSpec s = base_spec();
    run::apply_variations(v, "/src", s);
    c.check(s);
    // What the variation does not own is untouched.
    const std::string name = c.name;
    if (name != "domain_host") {
      EXPECT_EQ(s.hostname, "sealrun");
    }
    if (name != "kernel" && name != "aslr") {
      EXPECT_FALSE(s.personality.has_value());
    }
    if (name != "build_path") {
      EXPECT_EQ(s.cwd, "/scratch/x");
    }
  }
  // Both personalities at once; time without libfaketime changes nothing.
  ContainmentSpec s = base_spec();
  run::apply_variations(*run::parse_variations("kernel,aslr,time"), "/src", s);
  EXPECT_EQ(s.personality, 0x0060000ul);
  EXPECT_EQ(s.env, base_spec().env);
  EXPECT_TRUE(s.files_and_links.empty());
}

TEST(Variations, DescribeTable) {
  struct Case {
    const char* name;
    const char* says;  // a part of `how`: how it is applied, or where it cannot apply
  };
  const Case cases[] = {
      {"time", "373 days later"},     {"time", "statically linked programs"},
      {"fileordering", "tmpfs"},      {"fileordering", "not varied for a writable source"},
      {"kernel", "UNAME26"},          {"kernel", "`uname -v`"},
      {"aslr", "ADDR_NO_RANDOMIZE"},  {"exec_path", "/.sealrun-rebuild-path"},
      {"exec_path", "under podman"},  {"domain_host", "sealrun-rebuild.invalid"},
      {"domain_host", "root"},        {"home", "HOME=/.sealrun-rebuild-home"},
      {"home", "under podman"},       {"build_path", "/scratch"},
      {"build_path", "under podman"},
  };
  for (const Case& c : cases) {
    Variations v = *run::parse_variations(c.name);
    v.faketime_sha256 = "ab";
    auto d = run::describe_variations(v);
    ASSERT_EQ(d.size(), 1u) << c.name;
    EXPECT_EQ(d[0]["name"], c.name);
    EXPECT_NE(d[0]["how"].get<std::string>().find(c.says), std::string::npos)
        << c.name << ": " << d[0]["how"];
  }
  // Without libfaketime, time says it was not varied and what to install.
  auto none = run::describe_variations(*run::parse_variations("time"));
  EXPECT_NE(none[0]["how"].get<std::string>().find("not varied"), std::string::npos);
  EXPECT_NE(none[0]["how"].get<std::string>().find("apt-get install faketime"), std::string::npos);
  // `all`: one record per name, in kVariationNames order.
  auto all = run::describe_variations(*run::parse_variations("all"));
  ASSERT_EQ(all.size(), std::size(run::kVariationNames));
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i]["name"], run::kVariationNames[i]);
}

}  // namespace
}  // namespace sealrun
