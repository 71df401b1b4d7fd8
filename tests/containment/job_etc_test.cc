// SPDX-License-Identifier: Apache-2.0
// Unit tests of the job's generated /etc (containment/job_etc.h): the exact contents for a table of
// identities, the identity bwrap gives the job, which entries the view gets (none with an image;
// none where a read-only mount has no regular file to bind over), and how bwrap binds them.
#include "containment/job_etc.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>

#include "containment/bwrap_argv.h"
#include "core/generated_etc.h"
#include "fingerprint/sha256.h"
#include "tests/support/temp_dir.h"

namespace sealrun {
namespace {

namespace fs = std::filesystem;
using sealrun::testing::TempDir;
using sealrun::testing::write_text;

std::map<std::string, std::string> by_path(const std::vector<JobEtcFile>& files) {
  std::map<std::string, std::string> out;
  for (const auto& f : files) out[f.job_path] = f.bytes;
  return out;
}

TEST(JobEtcFiles, TheSixFilesInOrderWithTheirNames) {
  auto files = job_etc_files({"sealrun", 1001, 1001, "/scratch"}, "sealrun");
  ASSERT_EQ(files.size(), kGeneratedEtcPaths.size());
  for (size_t i = 0; i < files.size(); ++i) {
    EXPECT_EQ(files[i].job_path, kGeneratedEtcPaths[i]);
    EXPECT_EQ("/etc/" + files[i].name, files[i].job_path);
    EXPECT_EQ(files[i].bytes.back(), '\n') << files[i].job_path;
  }
}

struct IdentityCase {
  const char* what;
  JobIdentity who;
  const char* passwd;
  const char* group;
};

TEST(JobEtcFiles, PasswdAndGroupForEachIdentity) {
  const IdentityCase cases[] = {
      {"the job user",
       {"sealrun", 1001, 1001, "/scratch"},
       "root:x:0:0:root:/root:/bin/sh\n"
       "sealrun:x:1001:1001:sealrun:/scratch:/bin/sh\n"
       "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
       "root:x:0:\nsealrun:x:1001:\nnogroup:x:65534:\n"},
      {"rebuild --vary user_id",
       {"sealrun", 4242, 4242, "/scratch"},
       "root:x:0:0:root:/root:/bin/sh\n"
       "sealrun:x:4242:4242:sealrun:/scratch:/bin/sh\n"
       "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
       "root:x:0:\nsealrun:x:4242:\nnogroup:x:65534:\n"},
      {"a uid of 0 is root's: listed once",
       {"builder", 0, 0, "/scratch"},
       "root:x:0:0:root:/root:/bin/sh\n"
       "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
       "root:x:0:\nnogroup:x:65534:\n"},
      {"the overflow id is nobody's",
       {"builder", 65534, 65534, "/scratch"},
       "root:x:0:0:root:/root:/bin/sh\n"
       "builder:x:65534:65534:builder:/scratch:/bin/sh\n",
       "root:x:0:\nbuilder:x:65534:\n"},
      {"a name that would break the line",
       {"a:b", 1001, 1002, "/scratch"},
       "root:x:0:0:root:/root:/bin/sh\n"
       "job:x:1001:1002:job:/scratch:/bin/sh\n"
       "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
       "root:x:0:\njob:x:1002:\nnogroup:x:65534:\n"},
  };
  for (const auto& c : cases) {
    auto files = by_path(job_etc_files(c.who, "h"));
    EXPECT_EQ(files["/etc/passwd"], c.passwd) << c.what;
    EXPECT_EQ(files["/etc/group"], c.group) << c.what;
  }
}

TEST(JobEtcFiles, HostsHostnameResolverAndNsswitch) {
  auto files = by_path(job_etc_files({"sealrun", 1001, 1001, "/scratch"}, "sealrun-rebuild"));
  EXPECT_EQ(files["/etc/hosts"],
            "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
            "127.0.1.1\tsealrun-rebuild\n");
  EXPECT_EQ(files["/etc/hostname"], "sealrun-rebuild\n");
  // Comments only: not one nameserver (nor search or options) line.
  std::istringstream resolv(files["/etc/resolv.conf"]);
  int lines = 0;
  for (std::string line; std::getline(resolv, line); ++lines) EXPECT_EQ(line[0], '#') << line;
  EXPECT_GT(lines, 0);
  // Every database from files, and nothing else named as a source.
  std::string ns = files["/etc/nsswitch.conf"];
  for (const char* db : {"passwd", "group", "shadow", "hosts", "networks", "protocols", "services"})
    EXPECT_NE(ns.find(std::string("\n") + db + ":"), std::string::npos) << db;
  for (const char* other : {"dns", "systemd", "sss", "ldap", "mdns", "compat", "myhostname"})
    EXPECT_EQ(ns.find(other), std::string::npos) << other;
  // Pure: the same identity and hostname make the same bytes.
  EXPECT_EQ(files, by_path(job_etc_files({"sealrun", 1001, 1001, "/scratch"}, "sealrun-rebuild")));
}

ContainmentSpec spec_with_scratch() {
  ContainmentSpec s;
  s.owned_root = "/state/owned/r";
  s.hostname = "sealrun";
  s.mounts = {
      {"/state/owned/r/scratch", "/work", MountSpec::Access::kWritable, ViewKind::kScratch}};
  return s;
}

TEST(JobEtcIdentity, TheJobUsersOwnOrTheVariedUidAndTheScratchAsHome) {
  JobUser user{"sealrun", 1001, 1002, "/home/sealrun", true};
  ContainmentSpec s = spec_with_scratch();
  JobIdentity who = bwrap_job_identity(s, user);
  EXPECT_EQ(who.user, "sealrun");
  EXPECT_EQ(who.uid, 1001u);
  EXPECT_EQ(who.gid, 1002u);
  EXPECT_EQ(who.home, "/work");  // the admitted scratch path, not the host's home
  s.uid_in_job = 4242;
  who = bwrap_job_identity(s, user);
  EXPECT_EQ(who.uid, 4242u);
  EXPECT_EQ(who.gid, 4242u);  // bwrap --gid takes the same value
  s.mounts.clear();
  EXPECT_EQ(bwrap_job_identity(s, user).home, "/");
}

TEST(JobEtcEntries, GeneratedAndPinnedByTheirBytesInTheOwnedRoot) {
  JobUser user{"sealrun", 1001, 1001, "", true};
  ContainmentSpec s = spec_with_scratch();
  auto entries = job_etc_entries(s, user);
  auto files = job_etc_files(bwrap_job_identity(s, user), s.hostname);
  ASSERT_EQ(entries.size(), 6u);
  for (size_t i = 0; i < entries.size(); ++i) {
    EXPECT_EQ(entries[i].kind, ViewKind::kGenerated);
    EXPECT_EQ(entries[i].job_path, files[i].job_path);
    EXPECT_EQ(entries[i].host_path, "/state/owned/r/view/" + files[i].name);
    EXPECT_EQ(entries[i].pin, "sha256:" + sha256_hex(files[i].bytes));
    EXPECT_FALSE(entries[i].writable);
  }
  s.hostname = "other";  // a varied hostname changes what is pinned
  EXPECT_NE(job_etc_entries(s, user)[3].pin, entries[3].pin);
  s.image = ImageRef{"/images/a.tar", "sha256:00"};
  EXPECT_TRUE(job_etc_entries(s, user).empty()) << "an image's own /etc is the pinned one";
}

TEST(JobEtcEntries, OverAReadOnlyTreeOnlyWhereItHasARegularFile) {
  TempDir t;
  fs::create_directories(t / "etc");
  write_text(t / "etc/passwd", "tree\n");
  fs::create_symlink("/run/resolv.conf", t / "etc/resolv.conf");
  fs::create_directories(t / "etc/hosts");  // not a file either
  ContainmentSpec s = spec_with_scratch();
  s.mounts.push_back(
      {t / "etc", "/etc", MountSpec::Access::kReadOnly, ViewKind::kTree, "sha256:1"});
  std::vector<std::string> paths;
  for (const auto& e : job_etc_entries(s, JobUser{"sealrun", 1001, 1001, "", true}))
    paths.push_back(e.job_path);
  EXPECT_EQ(paths, std::vector<std::string>{"/etc/passwd"});
  // A tree mounted higher up counts the same way ("/" holding etc/...).
  s.mounts.back() = {t.path().string(), "/", MountSpec::Access::kReadOnly, ViewKind::kTree,
                     "sha256:1"};
  paths.clear();
  for (const auto& e : job_etc_entries(s, JobUser{"sealrun", 1001, 1001, "", true}))
    paths.push_back(e.job_path);
  EXPECT_EQ(paths, std::vector<std::string>{"/etc/passwd"});
}

TEST(JobEtcArgv, BoundFromDescriptorsReadOnlyAfterTheMountsTheyCover) {
  Grant g;
  g.mechanism = "bwrap";
  g.spec = spec_with_scratch();
  g.spec.argv = {"true"};
  g.spec.mounts.push_back(
      {"/etc", "/etc", MountSpec::Access::kReadOnly, ViewKind::kTree, "sha256:1"});
  g.spec.files_and_links.push_back({"/etc/passwd",
                                    ViewKind::kGenerated,
                                    "/state/owned/r/view/passwd",
                                    "sha256:2",
                                    false,
                                    {},
                                    -1});
  g.spec.files_and_links.push_back(
      {"/etc/hosts", ViewKind::kGenerated, "/state/owned/r/view/hosts", "sha256:3", false, {}, -1});
  BwrapFds fds{3, 4, {}, {"/stage/0", "/stage/1"}, -1, {{"/etc/passwd", 6}}};
  auto a = build_bwrap_argv("bwrap", g, fds);
  auto at = [&a](const std::vector<std::string>& seq) {
    auto it = std::search(a.begin(), a.end(), seq.begin(), seq.end());
    return it == a.end() ? std::string::npos : static_cast<size_t>(it - a.begin());
  };
  size_t tree = at({"--ro-bind", "/stage/1", "/etc"});
  size_t passwd = at({"--perms", "0444", "--ro-bind-data", "6", "/etc/passwd"});
  ASSERT_NE(tree, std::string::npos);
  ASSERT_NE(passwd, std::string::npos);
  EXPECT_LT(tree, passwd) << "bound over the tree, not under it";
  // Without a descriptor: by its path, still read-only.
  EXPECT_NE(at({"--ro-bind", "/state/owned/r/view/hosts", "/etc/hosts"}), std::string::npos);
}

}  // namespace
}  // namespace sealrun
