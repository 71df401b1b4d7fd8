// SPDX-License-Identifier: Apache-2.0
// Unit tests of the rootless podman mechanism's pure parts: the storage layout, the `podman run`
// command line built from a spec, the mount-access decisions and the probe's verdicts. These read
// the boundary as data; podman_integration_test.cc checks that podman really enforces it.
#include "containment/podman_argv.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "containment/podman.h"
#include "containment/podman_runner.h"
#include "containment/podman_storage.h"
#include "containment/podman_view.h"
#include "containment/view_plan.h"
#include "fingerprint/file_hash.h"
#include "fingerprint/sha256.h"
#include "tests/support/temp_dir.h"

namespace sealrun::podman {
namespace {

const std::string kId = "sha256:" + std::string(64, 'a');

std::string read_file_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ContainmentSpec sample_spec() {
  ContainmentSpec s;
  s.run_id = "r1";
  s.owned_root = "/state/owned/r1";
  s.argv = {"/bin/make", "-C", "/src"};
  s.env = {{"SOURCE_DATE_EPOCH", "0"}, {"LANG", "C"}};
  s.mounts = {{"/repo", "/src", MountSpec::Access::kReadOnly},
              {"/state/results/r1/out", "/out", MountSpec::Access::kWritable}};
  s.pids_max = 77;
  return s;
}

bool has_pair(const std::vector<std::string>& a, const std::string& flag, const std::string& v) {
  for (size_t i = 0; i + 1 < a.size(); ++i)
    if (a[i] == flag && a[i + 1] == v) return true;
  return false;
}
bool has(const std::vector<std::string>& a, const std::string& flag) {
  return std::find(a.begin(), a.end(), flag) != a.end();
}

TEST(PodmanLayout, EverythingLivesBelowTheOwnedRoot) {
  StorageLayout l = storage_layout("/state/owned/r1");
  EXPECT_EQ(l.base, "/state/owned/r1/podman");
  for (const auto& p : storage_dirs(l)) EXPECT_EQ(p.rfind(l.base, 0), 0u) << p;
  for (const auto* p : {&l.seccomp_profile, &l.cidfile, &l.conmon_pidfile, &l.image_copy})
    EXPECT_EQ(p->rfind(l.base + "/", 0), 0u) << *p;
  EXPECT_EQ(storage_dirs(l).front(), l.base);  // parents first
  auto env = podman_environment(l);
  EXPECT_TRUE(has(env, "XDG_RUNTIME_DIR=" + l.runtime_dir));
  EXPECT_TRUE(has(env, "TMPDIR=" + l.tmp_dir));
  EXPECT_TRUE(has(env, "HOME=" + l.home));
  EXPECT_EQ(env.size(), 4u);  // nothing of the controller's environment
}

TEST(PodmanArgv, GlobalFlagsPinStorageRuntimeAndCgroupManager) {
  StorageLayout l = storage_layout("/o");
  HostFacts f;
  f.podman_path = "/usr/bin/podman";
  f.runtime_path = "/usr/sbin/runc";
  auto a = global_args(l, f);
  EXPECT_EQ(a.front(), "/usr/bin/podman");
  EXPECT_TRUE(has_pair(a, "--root", l.graph_root));
  EXPECT_TRUE(has_pair(a, "--runroot", l.run_root_link));
  EXPECT_LE(l.run_root_link.size(), 50u);                          // podman's limit
  EXPECT_EQ(l.run_root_link, storage_layout("/o").run_root_link);  // recomputable by sweep
  EXPECT_NE(l.run_root_link, storage_layout("/o2").run_root_link);
  EXPECT_TRUE(has_pair(a, "--storage-driver", "vfs"));
  EXPECT_TRUE(has_pair(a, "--runtime", "/usr/sbin/runc"));
  EXPECT_TRUE(has_pair(a, "--cgroup-manager", "cgroupfs"));
}

TEST(PodmanArgv, RunCarriesEveryBoundaryFlag) {
  auto spec = sample_spec();
  StorageLayout l = storage_layout(spec.owned_root);
  HostFacts f;
  auto a = run_argv(spec, spec.mounts, l, f, kId);
  ASSERT_TRUE(a.ok()) << a.error().message();
  for (const char* flag :
       {"--pull=never", "--network=none", "--read-only", "--read-only-tmpfs=false",
        "--cap-drop=all", "--unsetenv-all", "--env-host=false", "--http-proxy=false", "--rm=false"})
    EXPECT_TRUE(has(*a, flag)) << flag;
  EXPECT_TRUE(has_pair(*a, "--security-opt", "no-new-privileges"));
  EXPECT_TRUE(has_pair(*a, "--security-opt", "seccomp=" + l.seccomp_profile));
  EXPECT_TRUE(has_pair(*a, "--name", "sealrun-r1"));
  EXPECT_TRUE(has_pair(*a, "--label", "sealrun.run=r1"));
  EXPECT_TRUE(has_pair(*a, "--cidfile", l.cidfile));
  EXPECT_TRUE(has_pair(*a, "--conmon-pidfile", l.conmon_pidfile));
  EXPECT_TRUE(has_pair(*a, "--workdir", "/src"));
  EXPECT_TRUE(has_pair(*a, "--log-driver", "none"));
  EXPECT_FALSE(has(*a, "--privileged"));
  EXPECT_FALSE(has(*a, "--env-host"));
}

TEST(PodmanArgv, ImageByIdThenTheJobArgvLast) {
  auto spec = sample_spec();
  auto a = run_argv(spec, spec.mounts, storage_layout(spec.owned_root), HostFacts{}, kId);
  ASSERT_TRUE(a.ok());
  ASSERT_GE(a->size(), 4u);
  size_t n = a->size();
  EXPECT_EQ((*a)[n - 4], std::string(64, 'a'));  // the id, never a tag
  EXPECT_EQ((*a)[n - 3], "/bin/make");
  EXPECT_EQ((*a)[n - 1], "/src");
}

TEST(PodmanArgv, OnlyAdmittedEnvironmentIsPassed) {
  auto spec = sample_spec();
  auto a = run_argv(spec, spec.mounts, storage_layout(spec.owned_root), HostFacts{}, kId);
  ASSERT_TRUE(a.ok());
  std::vector<std::string> envs;
  for (size_t i = 0; i + 1 < a->size(); ++i)
    if ((*a)[i] == "--env") envs.push_back((*a)[i + 1]);
  EXPECT_EQ(envs, (std::vector<std::string>{"LANG=C", "SOURCE_DATE_EPOCH=0"}));
}

TEST(PodmanArgv, MountsReadOnlyAndWritableAsAdmitted) {
  auto spec = sample_spec();
  auto a = run_argv(spec, spec.mounts, storage_layout(spec.owned_root), HostFacts{}, kId);
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(has_pair(*a, "--mount", "type=bind,src=/repo,dst=/src,nosuid,nodev,ro=true"));
  EXPECT_TRUE(has_pair(*a, "--mount", "type=bind,src=/state/results/r1/out,dst=/out,nosuid,nodev"));
  EXPECT_TRUE(has_pair(*a, "--tmpfs", "/tmp:rw,nosuid,nodev,exec,mode=1777"));
}

TEST(PodmanArgv, PidsLimitAndInitFollowHostFacts) {
  auto spec = sample_spec();
  StorageLayout l = storage_layout(spec.owned_root);
  HostFacts v1;
  auto a = run_argv(spec, spec.mounts, l, v1, kId);
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(has(*a, "--pids-limit"));  // ignored rootless on cgroup v1: left to the group
  EXPECT_FALSE(has(*a, "--init"));
  HostFacts v2;
  v2.cgroups_v2 = true;
  v2.have_init = true;
  auto b = run_argv(spec, spec.mounts, l, v2, kId);
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(has_pair(*b, "--pids-limit", "77"));
  EXPECT_TRUE(has(*b, "--init"));
}

// What podman would add to the view itself is either turned off (/etc/hosts) or made known: the
// files it would generate are sealrun's, bound read-only and pinned by their bytes' SHA-256, and
// the init binary is the one hashed, named with --init-path (docs/view.md).
TEST(PodmanView, OwnEntriesArePinnedAndBoundFromTheSpec) {
  auto spec = sample_spec();
  spec.hostname = "builder";
  StorageLayout l = storage_layout(spec.owned_root);
  HostFacts f;
  f.have_init = true;
  f.init_path = "/usr/libexec/podman/catatonit";
  auto own = own_view_entries(spec, f);
  ASSERT_TRUE(own.ok()) << own.error().message();
  std::map<std::string, ViewEntry> by_path;
  for (const ViewEntry& e : *own) by_path[e.job_path] = e;
  ASSERT_EQ(by_path.count("/etc/hostname"), 1u);
  EXPECT_EQ(by_path["/etc/hostname"].kind, ViewKind::kGenerated);
  EXPECT_EQ(by_path["/etc/hostname"].host_path, "/state/owned/r1/view/hostname");
  EXPECT_EQ(by_path["/etc/hostname"].pin, "sha256:" + sha256_hex("builder\n"));
  ASSERT_EQ(by_path.count("/run/.containerenv"), 1u);
  EXPECT_EQ(by_path["/run/.containerenv"].kind, ViewKind::kGenerated);
  ASSERT_EQ(by_path.count("/run/podman-init"), 1u);
  const ViewEntry init = by_path["/run/podman-init"];
  EXPECT_EQ(init.kind, ViewKind::kInit);
  EXPECT_EQ(init.host_path, std::filesystem::canonical(f.init_path).string());
  EXPECT_EQ(init.pin, "sha256:" + hash_file(init.host_path)->sha256);
  for (ViewEntry& e : *own) spec.files_and_links.push_back(e);
  ASSERT_TRUE(validate_spec(spec).ok());

  auto a = run_argv(spec, spec.mounts, l, f, kId);
  ASSERT_TRUE(a.ok()) << a.error().message();
  EXPECT_TRUE(has(*a, "--no-hosts"));
  EXPECT_TRUE(has(*a, "--init"));
  EXPECT_TRUE(has_pair(*a, "--init-path", init.host_path));
  EXPECT_TRUE(has_pair(
      *a, "--mount",
      "type=bind,src=/state/owned/r1/view/hostname,dst=/etc/hostname,nosuid,nodev,ro=true"));
  EXPECT_TRUE(has_pair(*a, "--mount",
                       "type=bind,src=/state/owned/r1/view/containerenv,dst=/run/"
                       ".containerenv,nosuid,nodev,ro=true"));
  // /sys is recorded, as kernel-made.
  bool sys = false;
  for (const ViewEntry& e : plan_view(spec, ViewRoot::kImage))
    sys = sys || (e.job_path == "/sys" && e.kind == ViewKind::kSys && e.pin.empty());
  EXPECT_TRUE(sys);
}

TEST(PodmanView, GeneratedFilesAreWrittenAsPinnedOnly) {
  sealrun::testing::TempDir dir;
  const std::string root = dir.path().string();
  auto spec = sample_spec();
  spec.owned_root = root;
  auto own = own_view_entries(spec, HostFacts{});
  ASSERT_TRUE(own.ok());
  EXPECT_EQ(own->size(), 2u);  // no init without catatonit
  std::vector<std::string> actions;
  // Not in the spec's view: nothing written (podman makes its own).
  ASSERT_TRUE(write_generated_files(spec, actions).ok());
  EXPECT_FALSE(std::filesystem::exists(root + "/view"));
  for (ViewEntry& e : *own) spec.files_and_links.push_back(e);
  ASSERT_TRUE(write_generated_files(spec, actions).ok());
  EXPECT_EQ(read_file_text(root + "/view/hostname"), spec.hostname + "\n");
  EXPECT_EQ(actions.size(), 2u);
  // A pin that is not what the spec makes is refused, naming the file.
  std::filesystem::remove_all(root + "/view");
  spec.files_and_links[0].pin = "sha256:" + std::string(64, '0');
  auto refused = write_generated_files(spec, actions);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("/etc/hostname"), std::string::npos);
}

TEST(PodmanArgv, RefusesWhatPodmanWouldMisparse) {
  auto spec = sample_spec();
  StorageLayout l = storage_layout(spec.owned_root);
  struct Case {
    std::string id;
    bool ok;
  } ids[] = {{kId, true},
             {std::string(64, 'b'), true},
             {"localhost/busybox:1", false},
             {"sha256:" + std::string(63, 'a'), false},
             {"sha256:" + std::string(64, 'A'), false}};
  for (const auto& c : ids) EXPECT_EQ(image_hex(c.id).ok(), c.ok) << c.id;
  for (const char* bad : {"/a,b", "/a=b", "relative"}) {
    auto m = spec.mounts;
    m[0].source = bad;
    EXPECT_FALSE(run_argv(spec, m, l, HostFacts{}, kId).ok()) << bad;
  }
  auto empty = spec;
  empty.argv.clear();
  EXPECT_FALSE(run_argv(empty, spec.mounts, l, HostFacts{}, kId).ok());
}

TEST(PodmanArgv, HousekeepingCommandsNameTheRunsContainer) {
  StorageLayout l = storage_layout("/o");
  HostFacts f;
  auto k = kill_argv(l, f, "r1", "TERM");
  EXPECT_EQ(std::vector<std::string>(k.end() - 4, k.end()),
            (std::vector<std::string>{"kill", "--signal", "TERM", "sealrun-r1"}));
  auto rm = rm_argv(l, f, "r1");
  EXPECT_TRUE(has(rm, "--force"));
  EXPECT_EQ(rm.back(), "sealrun-r1");
  auto ps = ps_argv(l, f, "r1");
  EXPECT_TRUE(has_pair(ps, "--filter", "label=sealrun.run=r1"));
  EXPECT_TRUE(has(ps, "--all"));
  auto un = unshare_rm_argv(l, f, {l.graph_root});
  EXPECT_EQ(un.back(), l.graph_root);
  EXPECT_TRUE(has(un, "unshare"));
  EXPECT_EQ(describe_command(load_argv(l, f, "/a.tar")), "podman load --quiet --input ...");
}

TEST(PodmanMounts, DecisionTable) {
  MountSpec ro{"/r", "/src", MountSpec::Access::kReadOnly};
  MountSpec rw{"/w", "/out", MountSpec::Access::kWritable};
  struct Case {
    MountSpec m;
    MountFacts f;
    MountAction want;
  } cases[] = {
      {ro, {true, false, false, true}, MountAction::kBindAsIs},
      {ro, {false, false, false, true}, MountAction::kStageCopy},
      {ro, {false, false, false, false}, MountAction::kRefuse},
      {rw, {true, false, false, false}, MountAction::kBindAsIs},
      {rw, {false, true, false, true}, MountAction::kChownToJobUser},
      {rw, {false, false, true, true}, MountAction::kChownToJobUser},
      {rw, {false, false, false, true}, MountAction::kRefuse},  // not provably the run's own
      {rw, {false, true, true, false}, MountAction::kRefuse},   // not root: change nothing
  };
  for (const auto& c : cases)
    EXPECT_EQ(static_cast<int>(decide_mount_action(c.m, c.f)), static_cast<int>(c.want))
        << c.m.source << " accessible=" << c.f.accessible_to_job_user;
}

TEST(PodmanMounts, PathIsBelow) {
  EXPECT_TRUE(path_is_below("/a/b/c", "/a/b"));
  EXPECT_FALSE(path_is_below("/a/bc", "/a/b"));
  EXPECT_FALSE(path_is_below("/a/b", "/a/b"));
  EXPECT_TRUE(path_is_below("/x", "/"));
}

const char* kGoodStatus =
    "Name:\tsh\nNoNewPrivs:\t1\nSeccomp:\t2\nCapInh:\t0000000000000000\nCapPrm:\t0000000000000000\n"
    "CapEff:\t0000000000000000\nCapBnd:\t0000000000000000\nCapAmb:\t0000000000000000\n";
const char* kGoodChecks =
    "@@sealrun-probe-checks\nroot_write=denied\nnet_ifaces=lo,\nuserns=denied\n"
    "pid1=/run/podman-init -- /bin/sh\npidns=pid:[4026532301]\nhost_pidns=pid:[4026531836]\n";

DimensionSet enforceable(const std::vector<DimensionCheck>& dims) {
  DimensionSet s;
  for (const auto& d : dims)
    if (d.enforceable) s.insert(d.dimension);
  return s;
}

TEST(PodmanProbeVerdicts, AGoodContainerOnCgroupV1) {
  HostFacts v1;
  auto dims = dimensions_from_probe(
      kGoodStatus, kGoodChecks,
      "Resource limits are not supported and ignored on cgroups V1 rootless systems\n", v1);
  EXPECT_EQ(dims.size(), 8u);
  EXPECT_EQ(enforceable(dims),
            (DimensionSet{Dimension::kFilesystem, Dimension::kProcessTree, Dimension::kWallClock,
                          Dimension::kNetwork, Dimension::kSyscalls, Dimension::kCapabilities}));
  for (const auto& d : dims) EXPECT_FALSE(d.why.empty());
}

TEST(PodmanProbeVerdicts, EachWeaknessIsSeen) {
  HostFacts v2;
  v2.cgroups_v2 = true;
  std::string status = kGoodStatus;
  EXPECT_TRUE(enforceable(dimensions_from_probe(status, kGoodChecks, "", v2))
                  .contains(Dimension::kProcessCount));
  auto replace = [](std::string s, const std::string& from, const std::string& to) {
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  struct Case {
    std::string status, checks;
    Dimension lost;
  } cases[] = {
      {replace(status, "CapEff:\t0000000000000000", "CapEff:\t00000000a80425fb"), kGoodChecks,
       Dimension::kCapabilities},
      {replace(status, "NoNewPrivs:\t1", "NoNewPrivs:\t0"), kGoodChecks, Dimension::kCapabilities},
      {replace(status, "Seccomp:\t2", "Seccomp:\t0"), kGoodChecks, Dimension::kSyscalls},
      {status, replace(kGoodChecks, "userns=denied", "userns=allowed"), Dimension::kSyscalls},
      {status, replace(kGoodChecks, "net_ifaces=lo,", "net_ifaces=lo,eth0,"), Dimension::kNetwork},
      {status, replace(kGoodChecks, "root_write=denied", "root_write=allowed"),
       Dimension::kFilesystem},
      {status, replace(kGoodChecks, "pid:[4026532301]", "pid:[4026531836]"),
       Dimension::kProcessTree},
  };
  for (const auto& c : cases)
    EXPECT_FALSE(enforceable(dimensions_from_probe(c.status, c.checks, "", v2)).contains(c.lost))
        << dimension_name(c.lost);
}

// `podman load` lists every transport's complaint; the one that is not about the format is the
// reason (issue 10 item 11: it was hidden behind the last line, "dir: ...: not a directory").
TEST(PodmanErrors, LoadFailureNamesTheRealReason) {
  const std::string err =
      "time=\"x\" level=error msg=\"While applying layer: ApplyLayer stdout:  stderr: open /a/b: "
      "not "
      "a directory exit status 1\"\n"
      "Error: payload does not match any of the supported image formats:\n"
      " * oci: initializing source oci:/i.tar:: open /i.tar/index.json: not a directory\n"
      " * oci-archive: writing blob: adding layer with blob \"sha256:d7\": ApplyLayer stdout:  "
      "stderr: open /a/b: not a directory exit status 1\n"
      " * docker-archive: loading tar component manifest.json: file does not exist\n"
      " * dir: open /i.tar/manifest.json: not a directory\n";
  std::string why = last_stderr_line(err);
  EXPECT_EQ(why,
            "oci-archive: writing blob: adding layer with blob \"sha256:d7\": ApplyLayer stdout:  "
            "stderr: open /a/b: not a directory exit status 1");
  // A docker archive: the oci-archive line is the format complaint.
  const std::string docker =
      "Error: payload does not match any of the supported image formats:\n"
      " * oci: x: not a directory\n"
      " * oci-archive: loading index: open /var/tmp/oci1/index.json: no such file or directory\n"
      " * docker-archive: writing blob: bad layer\n"
      " * dir: open /d.tar/manifest.json: not a directory\n";
  EXPECT_EQ(last_stderr_line(docker), "docker-archive: writing blob: bad layer");
  // Anything else: the last line, as before.
  EXPECT_EQ(last_stderr_line("warn\nError: no such container\n\n"), "Error: no such container");
}

TEST(PodmanExit, SignalsAreReadTheShellWay) {
  EXPECT_EQ(job_status_from_podman({137, 0}).signal, 9);
  EXPECT_EQ(job_status_from_podman({137, 0}).code, -1);
  EXPECT_EQ(job_status_from_podman({143, 0}).signal, 15);
  EXPECT_EQ(job_status_from_podman({128, 0}).code, 128);
  EXPECT_EQ(job_status_from_podman({193, 0}).code, 193);
  EXPECT_EQ(job_status_from_podman({3, 0}).code, 3);
  EXPECT_EQ(job_status_from_podman({-1, 9}).signal, 9);  // podman itself killed
}

}  // namespace
}  // namespace sealrun::podman
