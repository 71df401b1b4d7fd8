// SPDX-License-Identifier: Apache-2.0
// Integration tests of the rootless podman mechanism with the real podman 4.3 + runc on this host
// and the busybox fixture image (tests/fixtures/busybox_image.sh). Each hostile attempt runs as
// the static helper podman_jobs/escape.c copied into the job's /src; each test ends with cleanup()
// confirmed: no container with the run's label, no storage, no process left.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>

#include "containment/grant.h"
#include "containment/podman.h"
#include "containment/podman_argv.h"
#include "containment/podman_runner.h"
#include "containment/podman_storage.h"
#include "containment/resgroup/resource_group.h"
#include "core/proc.h"
#include "core/syscall.h"
#include "tests/fingerprint/tar_builder.h"
#include "tests/support/raw_pty.h"
#include "tests/support/temp_dir.h"

namespace sealrun {
namespace {

namespace fs = std::filesystem;
using testing::read_text;
using testing::TempDir;

std::string fixture(const std::string& name) {
  std::string dir = std::string(SEALRUN_BINARY_DIR) + "/fixtures";
  if (!fs::exists(dir + "/busybox.oci.tar") || !fs::exists(dir + "/busybox.image-id")) {
    std::string cmd = "bash " + std::string(SEALRUN_SOURCE_DIR) +
                      "/tests/fixtures/busybox_image.sh " + dir + " >/dev/null";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  return dir + "/" + name;
}

std::string image_id() {
  std::string id = read_text(fixture("busybox.image-id"));
  return id.substr(0, id.find_first_of(" \n"));
}

const DimensionSet kPodmanDims{Dimension::kFilesystem, Dimension::kProcessTree,
                               Dimension::kWallClock,  Dimension::kNetwork,
                               Dimension::kSyscalls,   Dimension::kCapabilities};

class PodmanIntegration : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    mechanism_ = make_podman_mechanism().release();
    probe_ = new MechanismProbe(mechanism_->probe());
  }
  static void TearDownTestSuite() {
    delete mechanism_;
    delete probe_;
  }

  void SetUp() override {
    ASSERT_TRUE(probe_->available) << probe_->unavailable_reason;
    // TempDir is 0700 root; the job user must be able to traverse to the owned root.
    fs::permissions(tmp_.path(), fs::perms(0711));
    for (const char* d : {"owned", "src", "out", "scratch"}) fs::create_directory(tmp_ / d);
    fs::permissions(tmp_ / "owned", fs::perms(0711));
    fs::copy_file(PODMAN_ESCAPE_HELPER, tmp_ / "src/escape");
    testing::write_text(tmp_ / "src/hello.txt", "hello from the source\n");
    spec_.run_id = "pm-" + std::to_string(::getpid()) + "-" +
                   ::testing::UnitTest::GetInstance()->current_test_info()->name();
    spec_.owned_root = tmp_ / "owned";
    spec_.cwd = "/src";
    spec_.env = {{"SOURCE_DATE_EPOCH", "1700000000"}, {"PATH", "/bin"}};
    spec_.mounts = {{tmp_ / "src", "/src", MountSpec::Access::kReadOnly},
                    {tmp_ / "out", "/out", MountSpec::Access::kWritable},
                    {tmp_ / "scratch", "/scratch", MountSpec::Access::kWritable}};
    spec_.image = ImageRef{fixture("busybox.oci.tar"), image_id()};
    spec_.requested = kPodmanDims;
    spec_.required = kPodmanDims;
    spec_.wall_clock_ms = 120 * 1000;
    spec_.stop_grace_ms = 2000;
  }

  Grant grant() const {
    Grant g;
    g.mechanism = "podman";
    g.requested = spec_.requested;
    g.required = spec_.required;
    g.enforced = spec_.requested & probe_->enforceable();
    g.spec = spec_;
    return g;
  }

  // A grant as acquire_grant() makes it when a resource group adds memory and process_count: the
  // real decision, so that spawn's re-check (which refuses a widened grant) accepts it.
  Grant grant_with_group() const {
    ContainmentSpec s = spec_;
    s.requested = s.requested | DimensionSet{Dimension::kMemory, Dimension::kProcessCount};
    GroupCapabilities groups;
    groups.memory = groups.process_count = true;
    auto g = acquire_grant(s, {mechanism_}, groups);
    EXPECT_TRUE(g.ok()) << g.error().message();
    return g.ok() ? *g : Grant{};
  }

  struct Outcome {
    JobExit exit;
    std::string out;
    std::string container_id;
    std::vector<std::string> cleanup;
  };

  // Runs argv to completion, cleans up (asserting it was confirmed) and returns what it printed.
  Outcome run(std::vector<std::string> argv, resgroup::ResourceGroup* group = nullptr) {
    spec_.argv = std::move(argv);
    Outcome o;
    UniqueFd out(::open((tmp_ / "stdout").c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    JobIo io{-1, out.get(), out.get()};
    auto job = mechanism_->spawn(grant(), group, io);
    EXPECT_TRUE(job.ok()) << job.error().message();
    if (!job.ok()) return o;
    auto exit = (*job)->wait();
    EXPECT_TRUE(exit.ok()) << exit.error().message();
    if (exit.ok()) o.exit = *exit;
    o.container_id = (*job)->container_id();
    auto cleaned = (*job)->cleanup();
    EXPECT_TRUE(cleaned.ok()) << cleaned.error().message();
    if (cleaned.ok()) o.cleanup = *cleaned;
    o.out = read_text(tmp_ / "stdout");
    expect_nothing_left(o.container_id);
    return o;
  }

  void expect_nothing_left(const std::string& container_id) {
    EXPECT_FALSE(fs::exists(spec_.owned_root + "/podman")) << "storage left behind";
    // No process started for this run (rootless podman's pause process included) survives.
    std::string xdg = "XDG_RUNTIME_DIR=" + podman::storage_layout(spec_.owned_root).runtime_dir;
    xdg.push_back('\0');
    for (const auto& e : fs::directory_iterator("/proc")) {
      std::ifstream f(e.path() / "environ");
      std::string env((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      EXPECT_EQ(env.find(xdg), std::string::npos) << "left: " << e.path();
    }
    if (container_id.empty()) return;
    // No process (conmon, the job) still mentions the container.
    for (const auto& e : fs::directory_iterator("/proc")) {
      std::ifstream f(e.path() / "cmdline");
      std::string cmd((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      EXPECT_EQ(cmd.find(container_id), std::string::npos) << "left: " << e.path() << " " << cmd;
    }
  }

  static Mechanism* mechanism_;
  static MechanismProbe* probe_;
  TempDir tmp_;
  ContainmentSpec spec_;
};

Mechanism* PodmanIntegration::mechanism_ = nullptr;
MechanismProbe* PodmanIntegration::probe_ = nullptr;

TEST_F(PodmanIntegration, ProbeReadsBackEachDimension) {
  EXPECT_EQ(probe_->name, "podman");
  EXPECT_EQ(probe_->version.rfind("4.", 0), 0u) << probe_->version;
  std::string verdicts;
  for (const auto& d : probe_->dimensions) {
    EXPECT_FALSE(d.why.empty()) << dimension_name(d.dimension);
    verdicts += fmt::format("{} {}: {}\n", dimension_name(d.dimension), d.enforceable, d.why);
  }
  // memory and pids come from the resource group on this cgroup v1 host
  EXPECT_EQ(probe_->enforceable(), kPodmanDims) << verdicts;
}

TEST_F(PodmanIntegration, TrueExitsZeroAndCleanupIsConfirmed) {
  auto o = run({"/bin/true"});
  EXPECT_TRUE(o.exit.status.success()) << o.exit.status.describe() << o.out;
  EXPECT_FALSE(o.exit.timed_out);
  EXPECT_EQ(o.container_id.size(), 64u);
  bool none_left = false;
  for (const auto& a : o.cleanup) none_left = none_left || a.find("none left") != std::string::npos;
  EXPECT_TRUE(none_left);
}

TEST_F(PodmanIntegration, ExitCodesPropagate) {
  auto o = run({"/bin/sh", "-c", "exit 7"});
  EXPECT_EQ(o.exit.status.code, 7);
}

// Issue 10 item 11: podman exits 128 + N for a job killed by signal N (catatonit, its --init, and
// conmon both report it so); sealrun records the signal, as bwrap's runs do. A job that exits 137
// on purpose reads the same: podman keeps no other trace (docs/containment.md).
TEST_F(PodmanIntegration, AJobKilledByASignalIsRecordedWithTheSignal) {
  auto o = run({"/bin/sh", "-c", "kill -KILL $$"});
  EXPECT_EQ(o.exit.status.signal, SIGKILL) << o.exit.status.describe();
  EXPECT_EQ(o.exit.status.code, -1);
  o = run({"/bin/sh", "-c", "kill -TERM $$"});
  EXPECT_EQ(o.exit.status.signal, SIGTERM) << o.exit.status.describe();
  o = run({"/bin/sh", "-c", "exit 137"});
  EXPECT_EQ(o.exit.status.signal, SIGKILL)
      << "podman cannot tell these apart: " << o.exit.status.describe();
  o = run({"/bin/sh", "-c", "exit 128"});  // not 128 + a signal
  EXPECT_EQ(o.exit.status.code, 128);
  EXPECT_EQ(o.exit.status.signal, 0);
}

// Issue 10 item 11: a layer podman refuses to apply is refused with podman's own reason (the file
// it could not make), not the last line of `podman load`'s list of formats it tried
// ("dir: .../manifest.json: not a directory"), for an OCI archive and a docker archive alike; and
// nothing of the attempt is left.
TEST_F(PodmanIntegration, AHostileLayerIsRefusedWithPodmansOwnReason) {
  // "a" is a file, then "a/b" needs it to be a directory.
  auto img = testing::make_oci_image(testing::make_tar({{"a", "x\n"}, {"a/b", "x\n"}}));
  std::string oci = tmp_ / "hostile.oci.tar";
  testing::write_text(oci, testing::make_tar(img.members));
  std::string config_name = img.config_hex + ".json";
  std::string docker = tmp_ / "hostile.docker.tar";
  testing::write_text(
      docker,
      testing::make_tar(
          {{"manifest.json", nlohmann::json::array({{{"Config", config_name},
                                                     {"RepoTags", {"localhost/hostile:1"}},
                                                     {"Layers", {img.layer_hex + "/layer.tar"}}}})
                                 .dump()},
           {config_name, img.config},
           {img.layer_hex + "/layer.tar", img.layer}}));
  for (const std::string& archive : {oci, docker}) {
    SCOPED_TRACE(archive);
    fs::permissions(archive, fs::perms(0644));
    spec_.image = ImageRef{archive, "sha256:" + img.config_hex};
    spec_.argv = {"/bin/true"};
    UniqueFd out(::open((tmp_ / "stdout").c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    auto job = mechanism_->spawn(grant(), nullptr, JobIo{-1, out.get(), out.get()});
    ASSERT_FALSE(job.ok()) << "podman ran an image whose layer it cannot apply";
    std::string why = job.error().message();
    EXPECT_NE(why.find("/a/b: not a directory"), std::string::npos) << why;
    EXPECT_EQ(why.find("manifest.json"), std::string::npos) << why;
    expect_nothing_left("");
  }
}

TEST_F(PodmanIntegration, WrongImageIdIsRefusedBeforeAnythingRuns) {
  spec_.image->image_id = "sha256:" + std::string(64, '0');
  spec_.argv = {"/bin/touch", "/out/ran"};
  auto job = mechanism_->spawn(grant(), nullptr, JobIo{});
  ASSERT_FALSE(job.ok());
  EXPECT_NE(job.error().message().find("not the admitted image id"), std::string::npos)
      << job.error().message();
  EXPECT_FALSE(fs::exists(tmp_ / "out/ran"));
  expect_nothing_left("");
}

TEST_F(PodmanIntegration, JobSeesOnlyTheAdmittedEnvironment) {
  spec_.env["FOO"] = "bar baz";
  auto o = run({"/bin/env"});
  std::set<std::string> seen;
  std::istringstream in(o.out);
  for (std::string line; std::getline(in, line);) seen.insert(line);
  // podman always exports HOSTNAME (fixed to "sealrun") and HOME (from the image's passwd) —
  // documented in podman_argv.cc; nothing of the controller's or podman's own environment.
  EXPECT_EQ(seen, (std::set<std::string>{"FOO=bar baz", "SOURCE_DATE_EPOCH=1700000000", "PATH=/bin",
                                         "HOSTNAME=sealrun", "HOME=/"}));
}

TEST_F(PodmanIntegration, NetworkIsNone) {
  int tcp = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(tcp, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(tcp, 4), 0);
  socklen_t len = sizeof a;
  ::getsockname(tcp, reinterpret_cast<sockaddr*>(&a), &len);
  std::string abstract = "sealrun-podman-test-" + std::to_string(::getpid());
  int unix_fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un u{};
  u.sun_family = AF_UNIX;
  std::memcpy(u.sun_path + 1, abstract.data(), abstract.size());
  socklen_t ulen = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + abstract.size());
  ASSERT_EQ(::bind(unix_fd, reinterpret_cast<sockaddr*>(&u), ulen), 0);
  ASSERT_EQ(::listen(unix_fd, 4), 0);

  std::string port = std::to_string(ntohs(a.sin_port));
  auto o = run({"/bin/sh", "-c",
                "/src/escape connect-tcp " + port + " && /src/escape connect-abstract " + abstract +
                    " && cat /proc/net/dev"});
  ::close(tcp);
  ::close(unix_fd);
  EXPECT_TRUE(o.exit.status.success()) << o.out;
  EXPECT_NE(o.out.find("connect-tcp: denied"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("connect-abstract: denied"), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("eth"), std::string::npos) << o.out;
}

TEST_F(PodmanIntegration, RootIsReadOnlyAndOnlyAdmittedMountsAreWritable) {
  auto o = run({"/bin/sh", "-c",
                "cat /src/hello.txt; for p in / /src /etc /bin; do touch $p/w 2>/dev/null && echo "
                "WROTE $p; done; for p in /out /scratch /tmp; do touch $p/w && echo ok $p; done; "
                "echo result > /out/made"});
  EXPECT_TRUE(o.exit.status.success()) << o.out;
  EXPECT_NE(o.out.find("hello from the source"), std::string::npos);
  EXPECT_EQ(o.out.find("WROTE"), std::string::npos) << o.out;
  for (const char* p : {"ok /out", "ok /scratch", "ok /tmp"})
    EXPECT_NE(o.out.find(p), std::string::npos) << p << "\n" << o.out;
  EXPECT_EQ(read_text(tmp_ / "out/made"), "result\n");
  EXPECT_FALSE(fs::exists(tmp_ / "src/w"));
}

TEST_F(PodmanIntegration, UnreadableSourceIsStagedNotExposed) {
  fs::permissions(tmp_ / "src", fs::perms(0700));  // root's only: the job user cannot read it
  auto o = run({"/bin/cat", "/src/hello.txt"});
  EXPECT_TRUE(o.exit.status.success()) << o.out;
  EXPECT_EQ(o.out, "hello from the source\n");
  bool staged = false;
  for (const auto& a : o.cleanup) staged = staged || a.rfind("staged ", 0) == 0;
  EXPECT_TRUE(staged);
}

// CI may clone the repository where the job user cannot read (e.g. below /root): the archive is
// then copied into the run's storage as root before `podman load`.
TEST_F(PodmanIntegration, UnreadableImageArchiveIsCopiedIn) {
  fs::create_directory(tmp_ / "private");
  fs::permissions(tmp_ / "private", fs::perms(0700));
  fs::copy_file(spec_.image->archive_path, tmp_ / "private/image.tar");
  spec_.image->archive_path = tmp_ / "private/image.tar";
  auto o = run({"/bin/true"});
  EXPECT_TRUE(o.exit.status.success()) << o.out;
  bool copied = false;
  for (const auto& a : o.cleanup) copied = copied || a.rfind("copied image archive", 0) == 0;
  EXPECT_TRUE(copied);
}

TEST_F(PodmanIntegration, NoCapabilitiesNoNewPrivsSeccompFilter) {
  auto o = run({"/bin/cat", "/proc/self/status"});
  for (const char* line :
       {"CapInh:\t0000000000000000", "CapPrm:\t0000000000000000", "CapEff:\t0000000000000000",
        "CapBnd:\t0000000000000000", "CapAmb:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2"})
    EXPECT_NE(o.out.find(line), std::string::npos) << line << "\n" << o.out;
}

TEST_F(PodmanIntegration, SeccompDeniesEscapes) {
  std::string script;
  for (const char* m : {"unshare-user", "clone-newuser", "keyctl", "add_key", "ptrace-1", "mount",
                        "setns-user", "io_uring_setup", "bpf", "perf_event_open", "userfaultfd"})
    script += std::string("/src/escape ") + m + " || echo ESCAPED " + m + "; ";
  auto o = run({"/bin/sh", "-c", script});
  EXPECT_EQ(o.out.find("ESCAPED"), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("ALLOWED"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("userfaultfd: denied"), std::string::npos) << o.out;
}

TEST_F(PodmanIntegration, TiocstiFromTheJobReachesNoTerminal) {
  // ACCEPTANCE 1 for podman: the controller's terminal (a pty here) is the job's stdout and
  // stderr; the job tries TIOCSTI on its standard descriptors and /dev/tty.
  auto pty = testing::open_raw_pty();
  const int slave = pty.slave.get();
  spec_.argv = {"/src/escape", "tiocsti"};
  auto job = mechanism_->spawn(grant(), nullptr, JobIo{-1, slave, slave});
  ASSERT_TRUE(job.ok()) << job.error().message();
  auto exit = (*job)->wait();
  ASSERT_TRUE(exit.ok()) << exit.error().message();
  const std::string container_id = (*job)->container_id();
  auto cleaned = (*job)->cleanup();
  EXPECT_TRUE(cleaned.ok()) << cleaned.error().message();
  std::string out = testing::terminal_output(pty.master.get());
  EXPECT_NE(out.find("tiocsti: denied"), std::string::npos) << out;
  EXPECT_TRUE(exit->status.success()) << exit->status.describe() << out;
  EXPECT_EQ(testing::pending_input(slave), 0)
      << "bytes were pushed into the terminal's input queue";
  expect_nothing_left(container_id);
}

TEST_F(PodmanIntegration, OnlyStandardDescriptorsReachTheJob) {
  std::vector<UniqueFd> leaked;
  for (int i = 0; i < 50; ++i)
    leaked.emplace_back(::open("/dev/null", i % 2 == 0 ? O_RDONLY : O_RDONLY | O_CLOEXEC));
  auto o = run({"/src/escape", "fds"});
  EXPECT_TRUE(o.exit.status.success()) << o.out;
}

TEST_F(PodmanIntegration, WallClockLimitStopsTheJob) {
  spec_.wall_clock_ms = 2000;
  int64_t start = monotonic_ms();
  auto o = run({"/bin/sleep", "60"});
  EXPECT_TRUE(o.exit.timed_out);
  EXPECT_FALSE(o.exit.status.success());
  EXPECT_LT(monotonic_ms() - start, 30 * 1000);
}

TEST_F(PodmanIntegration, StopEndsARunningJob) {
  spec_.argv = {"/bin/sleep", "60"};
  auto job = mechanism_->spawn(grant(), nullptr, JobIo{});
  ASSERT_TRUE(job.ok()) << job.error().message();
  // Until podman has created the container (its id is in the cidfile), not a fixed pause.
  std::string cid;
  for (int64_t deadline = monotonic_ms() + 60000; cid.empty() && monotonic_ms() < deadline;) {
    cid = (*job)->container_id();
    if (cid.empty()) ::poll(nullptr, 0, 50);
  }
  ASSERT_FALSE(cid.empty()) << "podman never created the container";
  ASSERT_TRUE((*job)->stop(1000).ok());
  auto exit = (*job)->wait();
  ASSERT_TRUE(exit.ok());
  EXPECT_FALSE(exit->timed_out);
  EXPECT_FALSE(exit->status.success());
  ASSERT_TRUE((*job)->cleanup().ok());
  expect_nothing_left(cid);
}

// The podman process is placed into the resource group before exec; on this cgroup v1 host rootless
// podman (cgroupfs) creates no group of its own, so conmon and the container's processes inherit
// it. Checked from the host: /proc/<pid>/cgroup of the container's main process and of conmon.
TEST_F(PodmanIntegration, ContainerProcessesLandInTheResourceGroup) {
  resgroup::GroupLimits limits;
  limits.memory_max_bytes = 256ULL << 20;
  limits.memory_high_bytes = 200ULL << 20;
  limits.pids_max = 64;
  auto group = resgroup::create_group(spec_.run_id, limits, resgroup::Backend::kCgroupV1);
  ASSERT_TRUE(group.ok()) << group.error().message();
  std::vector<std::string> locators = (*group)->locators();
  ASSERT_FALSE(locators.empty());

  spec_.argv = {"/bin/sleep", "60"};
  Grant g = grant_with_group();
  auto job = mechanism_->spawn(g, group->get(), JobIo{});
  ASSERT_TRUE(job.ok()) << job.error().message();

  auto layout = podman::storage_layout(spec_.owned_root);
  auto user = podman::resolve_job_user(testing::test_job_user_name());
  ASSERT_TRUE(user.ok());
  std::string pid;
  for (int i = 0; i < 100 && (pid.empty() || pid == "0"); ++i) {
    ::usleep(100 * 1000);
    auto facts = podman::HostFacts{};
    facts.podman_path = probe_->path;
    auto runc = find_program("runc");
    ASSERT_TRUE(runc.ok());
    facts.runtime_path = *runc;
    auto out = podman::podman_output(*user, layout,
                                     podman::inspect_pid_argv(layout, facts, spec_.run_id), 30000);
    if (out.ok()) pid = out->substr(0, out->find('\n'));
  }
  ASSERT_FALSE(pid.empty());
  ASSERT_NE(pid, "0");
  std::string conmon = read_text(layout.conmon_pidfile);
  for (const std::string& p : {pid, conmon.substr(0, conmon.find_first_of(" \n"))}) {
    std::string cg = read_text("/proc/" + p + "/cgroup");
    for (const std::string& loc : locators) {
      // ".../memory/<path>" -> the "memory:<path>" line of /proc/<pid>/cgroup.
      std::string rest = loc.substr(std::string("/sys/fs/cgroup/").size());
      std::string controller = rest.substr(0, rest.find('/'));
      std::string path = rest.substr(controller.size());
      EXPECT_NE(cg.find(":" + controller + ":" + path + "\n"), std::string::npos)
          << "pid " << p << " is not in " << loc << ":\n"
          << cg;
    }
  }
  ASSERT_TRUE((*job)->stop(1000).ok());
  ASSERT_TRUE((*job)->wait().ok());
  auto cleaned = (*job)->cleanup();
  EXPECT_TRUE(cleaned.ok()) << cleaned.error().message();
  auto stopped = (*group)->stop(1000);
  ASSERT_TRUE(stopped.ok()) << stopped.error().message();
  EXPECT_TRUE(stopped->confirmed);
  EXPECT_TRUE((*group)->remove().ok());
}

// ACCEPTANCE 9 through podman: rootless podman ignores --pids-limit on cgroup v1, so the limit is
// the resource group's; a fork bomb inside the container hits it, and the group ends empty.
TEST_F(PodmanIntegration, ForkBombHitsTheGroupsPidsLimit) {
  resgroup::GroupLimits limits;
  limits.memory_max_bytes = 256ULL << 20;
  limits.memory_high_bytes = 200ULL << 20;
  limits.pids_max = 40;  // podman, conmon, catatonit and the shell fit; 100 sleeps do not
  auto group = resgroup::create_group(spec_.run_id, limits, resgroup::Backend::kCgroupV1);
  ASSERT_TRUE(group.ok()) << group.error().message();
  spec_.argv = {"/src/escape", "fork", "100"};
  Grant g = grant_with_group();
  UniqueFd out(::open((tmp_ / "stdout").c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  auto job = mechanism_->spawn(g, group->get(), JobIo{-1, out.get(), out.get()});
  ASSERT_TRUE(job.ok()) << job.error().message();
  auto exit = (*job)->wait();
  ASSERT_TRUE(exit.ok()) << exit.error().message();
  EXPECT_TRUE((*job)->cleanup().ok());
  auto stopped = (*group)->stop(1000);
  ASSERT_TRUE(stopped.ok()) << stopped.error().message();
  EXPECT_TRUE(stopped->confirmed);
  EXPECT_TRUE((*group)->remove().ok());
  std::string text = read_text(tmp_ / "stdout");
  size_t at = text.find("started ");
  ASSERT_NE(at, std::string::npos) << exit->status.describe() << ": " << text;
  int started = std::atoi(text.c_str() + at + 8);
  EXPECT_GT(started, 0) << text;
  EXPECT_LT(started, 40) << text;
}

// ACCEPTANCE 13 for podman: the controller is SIGKILLed mid-run (here: a forked copy of the test
// that started the job). Its podman process dies with it, and the watchdog removes the container,
// so within a few seconds no process of the container survives.
TEST_F(PodmanIntegration, ControllerDeathEndsTheContainer) {
  spec_.argv = {"/bin/sleep", "60"};
  Grant g = grant();
  auto report = make_pipe();
  ASSERT_TRUE(report.ok());
  pid_t controller = ::fork();
  ASSERT_GE(controller, 0);
  if (controller == 0) {
    report->read_end.reset();
    auto job = mechanism_->spawn(g, nullptr, JobIo{});
    if (!job.ok()) ::_exit(3);
    std::string cid;
    for (int i = 0; i < 200 && cid.size() != 64; ++i) {
      ::usleep(50 * 1000);
      cid = (*job)->container_id();
    }
    (void)write_all(report->write_end.get(), cid, "report");
    ::raise(SIGKILL);  // no destructor, no cleanup: as if the controller were killed
  }
  report->write_end.reset();
  auto cid = read_up_to(report->read_end.get(), 128, "report");
  int status = 0;
  ::waitpid(controller, &status, 0);
  ASSERT_TRUE(cid.ok());
  ASSERT_EQ(cid->size(), 64u) << "the forked controller did not start the job";
  EXPECT_TRUE(WIFSIGNALED(status));
  // The container lives as long as its conmon (which waits for the container's init). Only conmon
  // counts: podman's own `container cleanup <id>` exit command names the id too, and it may start
  // after conmon is gone; it is cleanup, not the container.
  auto container_alive = [&] {
    for (const auto& e : fs::directory_iterator("/proc")) {
      std::ifstream f(e.path() / "cmdline");
      std::string cmd((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      std::string argv0 = cmd.substr(0, cmd.find('\0'));
      bool conmon = fs::path(argv0).filename() == "conmon";
      if (conmon && cmd.find(*cid) != std::string::npos) return true;
    }
    return false;
  };
  int64_t deadline = monotonic_ms() + 10 * 1000;
  while (container_alive() && monotonic_ms() < deadline) ::usleep(100 * 1000);
  EXPECT_FALSE(container_alive()) << "container " << *cid << " outlived its controller";

  auto layout = podman::storage_layout(spec_.owned_root);
  // The watchdog's second `podman rm -f` comes a second after its first: let it finish.
  std::string watchdog_env = "XDG_RUNTIME_DIR=" + layout.runtime_dir + std::string(1, '\0');
  auto watchdog_alive = [&] {
    for (const auto& e : fs::directory_iterator("/proc")) {
      std::ifstream c(e.path() / "cmdline");
      std::string cmd((std::istreambuf_iterator<char>(c)), std::istreambuf_iterator<char>());
      std::ifstream f(e.path() / "environ");
      std::string env((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      if (cmd.find("sealrun-podman-watchdog") != std::string::npos &&
          env.find(watchdog_env) != std::string::npos)
        return true;
    }
    return false;
  };
  deadline = monotonic_ms() + 10 * 1000;
  while (watchdog_alive() && monotonic_ms() < deadline) ::usleep(100 * 1000);
  EXPECT_FALSE(watchdog_alive());
  // What `sealrun sweep` does next: the storage and the rootless pause process are still there.
  ASSERT_TRUE(fs::exists(layout.base));
  auto swept =
      podman::sweep_podman_storage(spec_.owned_root, spec_.run_id, testing::test_job_user_name(),
                                   default_short_link_dir(), *own_starttime());
  ASSERT_TRUE(swept.ok()) << swept.error().message();
  expect_nothing_left(*cid);
}

}  // namespace
}  // namespace sealrun
