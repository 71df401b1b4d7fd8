// SPDX-License-Identifier: Apache-2.0
// Unit tests of learn/closure_exclude.h: which --learn-exclude paths are accepted, and what is left
// out of a recorded access set and a closure, counted per exclusion; the job's generated /etc
// files always are.
#include "learn/closure_exclude.h"

#include <gtest/gtest.h>

namespace sealrun::learn {
namespace {

TEST(CheckExcludePath, AbsoluteAndNormalisedOnly) {
  struct Case {
    const char* path;
    const char* error;  // nullptr: accepted
  };
  const Case cases[] = {
      {"/etc/ssl/certs", nullptr},
      {"/etc/machine-id", nullptr},
      {"/a", nullptr},
      {"etc/ssl", "not an absolute path"},
      {"", "not an absolute path"},
      {"/", "every host file"},
      {"/etc/ssl/", "trailing"},
      {"/etc//ssl", "empty component"},
      {"/etc/./ssl", "\".\" or \"..\""},
      {"/etc/ssl/..", "\".\" or \"..\""},
  };
  for (const auto& c : cases) {
    Status st = check_exclude_path(c.path);
    if (c.error == nullptr) {
      EXPECT_TRUE(st.ok()) << c.path << ": " << st.error().message();
      continue;
    }
    ASSERT_FALSE(st.ok()) << c.path;
    EXPECT_NE(st.error().message().find(c.error), std::string::npos) << st.error().message();
    EXPECT_NE(st.error().message().find("--learn-exclude"), std::string::npos);
  }
}

TEST(LearningExclusions, TheGeneratedEtcFilesFirstThenTheCallersOnce) {
  auto ex = learning_exclusions({"/etc/ssl", "/etc/ssl", "/var/lib/x"});
  ASSERT_TRUE(ex.ok());
  std::vector<std::string> paths;
  for (const auto& e : *ex) {
    paths.push_back(e.path);
    EXPECT_EQ(e.generated, e.path.rfind("/etc/ssl", 0) != 0 && e.path != "/var/lib/x") << e.path;
  }
  EXPECT_EQ(paths, (std::vector<std::string>{"/etc/passwd", "/etc/group", "/etc/hosts",
                                             "/etc/hostname", "/etc/nsswitch.conf",
                                             "/etc/resolv.conf", "/etc/ssl", "/var/lib/x"}));
  EXPECT_FALSE(learning_exclusions({"relative"}).ok());
}

TEST(ExcludeObserved, AtOrBelowEachPathCountedAgainstIt) {
  auto ex = learning_exclusions({"/etc/ssl", "/usr/share/ca-certificates"});
  ASSERT_TRUE(ex.ok());
  ObservedAccess seen;
  seen.files = {"/etc/passwd",
                "/etc/passwd-",
                "/etc/hosts",
                "/etc/ssl/certs/ca.pem",
                "/etc/sslx",
                "/etc/ld.so.cache",
                "/usr/share/ca-certificates/a/b.crt",
                "/usr/bin/cat"};
  seen.dirs = {"/etc/ssl/certs", "/etc", "/usr/share/ca-certificates"};
  exclude_observed(seen, *ex);
  EXPECT_EQ(seen.files, (std::set<std::string>{"/etc/passwd-", "/etc/sslx", "/etc/ld.so.cache",
                                               "/usr/bin/cat"}));
  EXPECT_EQ(seen.dirs, (std::set<std::string>{"/etc"}));
  std::map<std::string, std::pair<size_t, size_t>> counts;  // path -> (files, dirs)
  for (const auto& e : *ex) counts[e.path] = {e.files, e.dirs};
  EXPECT_EQ(counts["/etc/passwd"], std::make_pair(size_t{1}, size_t{0}));
  EXPECT_EQ(counts["/etc/hosts"], std::make_pair(size_t{1}, size_t{0}));
  EXPECT_EQ(counts["/etc/group"], std::make_pair(size_t{0}, size_t{0}));
  EXPECT_EQ(counts["/etc/ssl"], std::make_pair(size_t{1}, size_t{1}));
  EXPECT_EQ(counts["/usr/share/ca-certificates"], std::make_pair(size_t{1}, size_t{1}));
}

TEST(ExcludeClosure, LinksFilesAndDirsAtOrBelow) {
  auto ex = learning_exclusions({"/etc/ssl"});
  ASSERT_TRUE(ex.ok());
  Closure c;
  c.files = {"/etc/ssl/openssl.cnf", "/usr/bin/cat"};
  c.links = {{"/etc/resolv.conf", "../run/resolv.conf"},
             {"/etc/ssl/certs/x.pem", "ca.pem"},
             {"/bin", "usr/bin"}};
  c.dirs = {"/etc/ssl/certs", "/usr/include"};
  exclude_closure(c, *ex);
  EXPECT_EQ(c.files, (std::vector<std::string>{"/usr/bin/cat"}));
  ASSERT_EQ(c.links.size(), 1u);
  EXPECT_EQ(c.links[0].path, "/bin");
  EXPECT_EQ(c.dirs, (std::vector<std::string>{"/usr/include"}));
  const Exclusion& ssl = ex->back();
  EXPECT_EQ(ssl.path, "/etc/ssl");
  EXPECT_EQ(ssl.files, 1u);
  EXPECT_EQ(ssl.links, 1u);
  EXPECT_EQ(ssl.dirs, 1u);
  EXPECT_EQ(ssl.removed(), 3u);
  for (const auto& e : *ex) {
    if (e.path == "/etc/resolv.conf") {
      EXPECT_EQ(e.links, 1u);
    }
  }
}

}  // namespace
}  // namespace sealrun::learn
