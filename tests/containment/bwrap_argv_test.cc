// build_bwrap_argv() as data: the options every job must get, the job environment exactly as
// admitted, read-only system binds, descriptor-bound mounts with the right access, "/" remounted
// read-only last, and the job's argv after "--" (so it can never be read as bwrap options).
#include "containment/bwrap_argv.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace sealrun {
namespace {

using Argv = std::vector<std::string>;

Grant sample_grant() {
  Grant g;
  g.mechanism = "bwrap";
  g.spec.run_id = "r";
  g.spec.argv = {"make", "--unshare-all-is-just-an-arg"};
  g.spec.env = {{"SOURCE_DATE_EPOCH", "7"}, {"PATH", "/usr/bin"}};
  g.spec.mounts = {{"/repo/src", "/src", MountSpec::Access::kReadOnly},
                   {"/state/owned/r/out", "/out", MountSpec::Access::kWritable}};
  return g;
}

HostRootLayout sample_layout() {
  HostRootLayout l;
  l.system = {{"/usr", RootEntry::Kind::kDirectory, ""},
              {"/bin", RootEntry::Kind::kSymlink, "usr/bin"},
              {"/lib64", RootEntry::Kind::kDirectory, ""}};
  l.etc = {"/etc/ld.so.cache", "/etc/passwd"};
  return l;
}

// Index of the first occurrence of the sequence `seq` in `a`, or npos.
size_t find_seq(const Argv& a, const Argv& seq) {
  auto it = std::search(a.begin(), a.end(), seq.begin(), seq.end());
  return it == a.end() ? std::string::npos : static_cast<size_t>(it - a.begin());
}

TEST(BwrapArgv, IsolationOptionsAreAllThere) {
  Argv a = build_bwrap_argv("/usr/bin/bwrap", sample_grant(), sample_layout(), {3, 4, {5, 6}});
  EXPECT_EQ(a[0], "/usr/bin/bwrap");
  size_t dashdash = find_seq(a, {"--"});
  ASSERT_NE(dashdash, std::string::npos);
  Argv opts(a.begin(), a.begin() + static_cast<long>(dashdash));
  for (const Argv& seq : std::vector<Argv>{{"--unshare-all"},
                                           {"--unshare-user"},
                                           {"--disable-userns"},
                                           {"--die-with-parent"},
                                           {"--new-session"},
                                           {"--cap-drop", "ALL"},
                                           {"--clearenv"},
                                           {"--proc", "/proc"},
                                           {"--dev", "/dev"},
                                           {"--tmpfs", "/tmp"},
                                           {"--chdir", "/src"},
                                           {"--json-status-fd", "3"},
                                           {"--seccomp", "4"}})
    EXPECT_NE(find_seq(opts, seq), std::string::npos) << seq[0];
  EXPECT_EQ(find_seq(opts, {"--share-net"}), std::string::npos);
  EXPECT_EQ(Argv(a.begin() + static_cast<long>(dashdash) + 1, a.end()), sample_grant().spec.argv);
}

TEST(BwrapArgv, EnvironmentIsExactlyTheAdmittedOne) {
  Argv a = build_bwrap_argv("bwrap", sample_grant(), sample_layout(), {3, 4, {5, 6}});
  size_t clear = find_seq(a, {"--clearenv"});
  EXPECT_LT(clear, find_seq(a, {"--setenv", "SOURCE_DATE_EPOCH", "7"}));
  EXPECT_LT(clear, find_seq(a, {"--setenv", "PATH", "/usr/bin"}));
  EXPECT_EQ(std::count(a.begin(), a.end(), "--setenv"), 2);
}

TEST(BwrapArgv, SystemIsReadOnlyAndMountsComeFromDescriptors) {
  Argv a = build_bwrap_argv("bwrap", sample_grant(), sample_layout(), {3, 4, {5, 6}});
  EXPECT_NE(find_seq(a, {"--ro-bind", "/usr", "/usr"}), std::string::npos);
  EXPECT_NE(find_seq(a, {"--symlink", "usr/bin", "/bin"}), std::string::npos);
  EXPECT_NE(find_seq(a, {"--ro-bind", "/lib64", "/lib64"}), std::string::npos);
  EXPECT_NE(find_seq(a, {"--ro-bind", "/etc/passwd", "/etc/passwd"}), std::string::npos);
  EXPECT_NE(find_seq(a, {"--ro-bind-fd", "5", "/src"}), std::string::npos);
  EXPECT_NE(find_seq(a, {"--bind-fd", "6", "/out"}), std::string::npos);
  // No writable bind of anything but the admitted writable mount.
  EXPECT_EQ(std::count(a.begin(), a.end(), "--bind"), 0);
  EXPECT_EQ(std::count(a.begin(), a.end(), "--bind-fd"), 1);
  // The host's / is never bound, and "/" is made read-only after every mount.
  EXPECT_EQ(find_seq(a, {"--ro-bind", "/", "/"}), std::string::npos);
  size_t remount = find_seq(a, {"--remount-ro", "/"});
  ASSERT_NE(remount, std::string::npos);
  EXPECT_GT(remount, find_seq(a, {"--bind-fd", "6", "/out"}));
  EXPECT_GT(remount, find_seq(a, {"--tmpfs", "/tmp"}));
}

TEST(BwrapArgv, NoSeccompFdLeavesTheOptionOut) {
  Argv a = build_bwrap_argv("bwrap", sample_grant(), sample_layout(), {3, -1, {5, 6}});
  EXPECT_EQ(find_seq(a, {"--seccomp"}), std::string::npos);
}

TEST(BwrapArgv, EtcEssentialsHoldNoSecrets) {
  for (const auto& path : etc_essentials()) {
    EXPECT_EQ(path.rfind("/etc/", 0), 0u) << path;
    for (const char* secret : {"shadow", "gshadow", "ssh", "ssl/private", "machine-id", "sudoers"})
      EXPECT_EQ(path.find(secret), std::string::npos) << path;
  }
}

TEST(BwrapArgv, HostLayoutHasUsr) {
  HostRootLayout l = read_host_root_layout();
  ASSERT_FALSE(l.system.empty());
  EXPECT_EQ(l.system[0].path, "/usr");
  EXPECT_EQ(l.system[0].kind, RootEntry::Kind::kDirectory);
}

}  // namespace
}  // namespace sealrun
