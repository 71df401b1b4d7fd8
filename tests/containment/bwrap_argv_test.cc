// SPDX-License-Identifier: Apache-2.0
// build_bwrap_argv() as data: the options every job must get, the job environment exactly as
// admitted, no host path that is not in the planned view (view_plan.h), descriptor-bound mounts
// with the right access, closure files and links as planned, "/" remounted read-only last, and the
// job's argv after "--" (so it can never be read as bwrap options).
#include "containment/bwrap_argv.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "containment/view_plan.h"

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

// Index of the first occurrence of the sequence `seq` in `a`, or npos.
size_t find_seq(const Argv& a, const Argv& seq) {
  auto it = std::search(a.begin(), a.end(), seq.begin(), seq.end());
  return it == a.end() ? std::string::npos : static_cast<size_t>(it - a.begin());
}

TEST(BwrapArgv, IsolationOptionsAreAllThere) {
  Argv a = build_bwrap_argv("/usr/bin/bwrap", sample_grant(), {3, 4, {5, 6}});
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
  Argv a = build_bwrap_argv("bwrap", sample_grant(), {3, 4, {5, 6}});
  size_t clear = find_seq(a, {"--clearenv"});
  EXPECT_LT(clear, find_seq(a, {"--setenv", "SOURCE_DATE_EPOCH", "7"}));
  EXPECT_LT(clear, find_seq(a, {"--setenv", "PATH", "/usr/bin"}));
  EXPECT_EQ(std::count(a.begin(), a.end(), "--setenv"), 2);
}

TEST(BwrapArgv, NoHostPathOutsideTheViewAndMountsComeFromDescriptors) {
  Argv a = build_bwrap_argv("bwrap", sample_grant(), {3, 4, {5, 6}});
  // Nothing of the host's system unless pinned: no /usr, /bin, /lib*, /etc.
  for (const char* host : {"/usr", "/bin", "/lib64", "/etc/passwd", "/etc/ld.so.cache", "/etc"})
    EXPECT_EQ(std::count(a.begin(), a.end(), host), 0) << host;
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

TEST(BwrapArgv, ClosureFilesAndLinksAreBoundAsPlanned) {
  Grant g = sample_grant();
  g.spec.mounts.push_back({"/usr", "/usr", MountSpec::Access::kReadOnly, ViewKind::kTree,
                           "sha256:" + std::string(64, 'a')});
  g.spec.files_and_links.push_back({"/etc/os-release",
                                    ViewKind::kClosure,
                                    "/etc/os-release",
                                    "sha256:" + std::string(64, 'b'),
                                    false,
                                    {},
                                    -1});
  add_compat_links({{"/bin", "usr/bin"}, {"/lib64", "usr/lib64"}}, &g.spec);
  Argv a = build_bwrap_argv("bwrap", g, {3, 4, {5, 6, 7}});
  EXPECT_NE(find_seq(a, {"--ro-bind-fd", "7", "/usr"}), std::string::npos);
  EXPECT_NE(find_seq(a, {"--ro-bind", "/etc/os-release", "/etc/os-release"}), std::string::npos);
  EXPECT_NE(find_seq(a, {"--symlink", "usr/bin", "/bin"}), std::string::npos);
  EXPECT_NE(find_seq(a, {"--symlink", "usr/lib64", "/lib64"}), std::string::npos);
  EXPECT_LT(find_seq(a, {"--symlink", "usr/bin", "/bin"}), find_seq(a, {"--remount-ro", "/"}));
}

TEST(BwrapArgv, NoSeccompFdLeavesTheOptionOut) {
  Argv a = build_bwrap_argv("bwrap", sample_grant(), {3, -1, {5, 6}});
  EXPECT_EQ(find_seq(a, {"--seccomp"}), std::string::npos);
}

// The compatibility links follow what the view holds: none without /usr, none over a pinned /bin.
TEST(ViewPlan, CompatLinksOnlyWhereTheViewHasTheirTarget) {
  const std::vector<CompatLink> host = {{"/bin", "usr/bin"}, {"/lib64", "usr/lib64"}};
  ContainmentSpec bare;
  bare.mounts = {{"/repo/src", "/src", MountSpec::Access::kReadOnly, ViewKind::kSource, "p"}};
  add_compat_links(host, &bare);
  EXPECT_TRUE(bare.files_and_links.empty());

  ContainmentSpec busybox = bare;
  busybox.mounts.push_back({"/fx/bb", "/bin", MountSpec::Access::kReadOnly, ViewKind::kTree, "p"});
  busybox.mounts.push_back({"/usr", "/usr", MountSpec::Access::kReadOnly, ViewKind::kTree, "p"});
  add_compat_links(host, &busybox);
  ASSERT_EQ(busybox.files_and_links.size(), 1u);  // /bin is the tree's, not a link
  EXPECT_EQ(busybox.files_and_links[0].job_path, "/lib64");
  EXPECT_EQ(busybox.files_and_links[0].kind, ViewKind::kLink);
  EXPECT_EQ(busybox.files_and_links[0].pin, "symlink:usr/lib64");

  ContainmentSpec closure = bare;
  closure.files_and_links.push_back(
      {"/usr/bin/gcc", ViewKind::kClosure, "/usr/bin/gcc", "p", false, {}, -1});
  add_compat_links(host, &closure);
  ASSERT_EQ(closure.files_and_links.size(), 2u);  // /bin (it has /usr/bin/gcc), not /lib64
  EXPECT_EQ(closure.files_and_links[1].job_path, "/bin");
}

TEST(ViewPlan, ImageRootHasNoLinksAndKernelPlacesComeFirst) {
  ContainmentSpec s;
  s.image = ImageRef{"/img.tar", "sha256:" + std::string(64, 'c')};
  s.mounts = {{"/repo/src", "/src", MountSpec::Access::kReadOnly, ViewKind::kSource, "p"}};
  s.files_and_links.push_back(
      {"/bin", ViewKind::kLink, {}, "symlink:usr/bin", false, "usr/bin", -1});
  auto image = plan_view(s, ViewRoot::kImage);
  ASSERT_EQ(image.size(), 6u);  // image, proc, dev, sys (podman mounts sysfs), tmp, src
  EXPECT_EQ(image[0].kind, ViewKind::kImage);
  EXPECT_EQ(image[0].pin, s.image->image_id);
  EXPECT_EQ(image[3].kind, ViewKind::kSys);
  EXPECT_EQ(image[5].mount_index, 0);
  auto tmpfs = plan_view(s, ViewRoot::kEmptyTmpfs);
  ASSERT_EQ(tmpfs.size(), 5u);  // proc, dev, tmp, src, the link
  EXPECT_EQ(tmpfs[0].kind, ViewKind::kProc);
  EXPECT_EQ(tmpfs[4].kind, ViewKind::kLink);
}

TEST(ViewPlan, HostCompatLinksPointIntoUsr) {
  for (const CompatLink& l : read_host_compat_links()) {
    EXPECT_EQ(l.path.rfind("/", 0), 0u);
    EXPECT_NE(l.target.find("usr/"), std::string::npos) << l.path;
  }
}

}  // namespace
}  // namespace sealrun
