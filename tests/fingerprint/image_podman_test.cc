// SPDX-License-Identifier: Apache-2.0
// Integration: inspect_image_archive() against real podman. The busybox fixture (an OCI archive
// written by `podman save --format oci-archive`) must give the image id the fixture recorded, and
// the id and diff ids that `podman image inspect` reports after loading the archive into a
// throwaway rootless storage as the job user; a `podman save` docker-archive of the same image
// must give the same identity. The storage is removed afterwards (from inside the user namespace,
// because vfs layers hold files owned by subordinate ids).
#include <gtest/gtest.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/process.h"
#include "fingerprint/image.h"
#include "tests/support/temp_dir.h"

namespace sealrun {
namespace {

namespace fs = std::filesystem;

std::string fixture_dir() { return std::string(SEALRUN_BINARY_DIR) + "/fixtures"; }

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// Builds the fixture when it is missing (the CI runs it before ctest; a developer may not have).
void ensure_fixture() {
  if (fs::exists(fixture_dir() + "/busybox.oci.tar") &&
      fs::exists(fixture_dir() + "/busybox.image-id"))
    return;
  std::string cmd = "bash " + std::string(SEALRUN_SOURCE_DIR) +
                    "/tests/fixtures/busybox_image.sh " + fixture_dir();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

std::string job_user() {
  const char* u = ::getenv("SEALRUN_JOB_USER");
  return u != nullptr && *u != '\0' ? u : "sealrun";
}

// A rootless podman storage under /var/tmp owned by the job user, removed on destruction.
class ThrowawayPodman {
 public:
  ThrowawayPodman() {
    std::string templ = "/var/tmp/sealrun-image-test-XXXXXX";
    if (::mkdtemp(templ.data()) == nullptr) {
      ADD_FAILURE() << "mkdtemp " << templ;
      return;
    }
    work_ = templ;
    ::chmod(work_.c_str(), 0755);
    for (const char* d : {"run", "storage", "runroot"}) fs::create_directory(work_ + "/" + d);
    ::chmod((work_ + "/run").c_str(), 0700);
    struct passwd* pw = ::getpwnam(job_user().c_str());
    if (pw == nullptr) {
      ADD_FAILURE() << "no job user " << job_user() << "; run .ci/setup";
      return;
    }
    uid_ = pw->pw_uid;
    gid_ = pw->pw_gid;
    for (const auto& e : fs::recursive_directory_iterator(work_)) {
      if (::lchown(e.path().c_str(), uid_, gid_) != 0) ADD_FAILURE() << "chown " << e.path();
    }
    if (::chown(work_.c_str(), uid_, gid_) != 0) ADD_FAILURE() << "chown " << work_;
  }
  ~ThrowawayPodman() {
    if (work_.empty()) return;
    as_user({"podman", "unshare", "rm", "-rf", work_ + "/storage", work_ + "/runroot"});
    stop_pause_process();
    std::error_code ec;
    fs::remove_all(work_, ec);
  }

  // Rootless podman keeps a pause process (catatonit) per runtime dir to hold its user namespace;
  // it would outlive the test, so stop the one this storage started (its pid is in our run dir).
  void stop_pause_process() {
    std::string pid_file = work_ + "/run/libpod/tmp/pause.pid";
    if (!fs::exists(pid_file)) return;
    pid_t pid = static_cast<pid_t>(std::atoi(testing::read_text(pid_file).c_str()));
    if (pid <= 1 || !fs::exists("/proc/" + std::to_string(pid))) return;
    std::string comm = trim(testing::read_text("/proc/" + std::to_string(pid) + "/comm"));
    EXPECT_EQ(comm, "catatonit") << "pause pid " << pid;
    if (comm == "catatonit") ::kill(pid, SIGKILL);
  }
  const std::string& work() const { return work_; }

  // Copies a file into the work dir, owned by the job user (it cannot read the repository).
  std::string stage(const std::string& path, const std::string& name) {
    std::string dest = work_ + "/" + name;
    fs::copy_file(path, dest, fs::copy_options::overwrite_existing);
    if (::chown(dest.c_str(), uid_, gid_) != 0) ADD_FAILURE() << "chown " << dest;
    return dest;
  }

  Captured as_user(const std::vector<std::string>& argv) {
    SpawnOptions o;
    o.argv = {"/usr/sbin/runuser",
              "-u",
              job_user(),
              "--",
              "env",
              "-i",
              "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
              "HOME=" + work_,
              "XDG_RUNTIME_DIR=" + work_ + "/run"};
    o.argv.insert(o.argv.end(), argv.begin(), argv.end());
    o.cwd = work_;
    auto c = run_capture(o, 5 * 60 * 1000);
    if (!c.ok()) {
      ADD_FAILURE() << c.error().message();
      return {};
    }
    return *c;
  }

  Captured podman(std::vector<std::string> args) {
    std::vector<std::string> argv = {"podman",
                                     "--root",
                                     work_ + "/storage",
                                     "--runroot",
                                     work_ + "/runroot",
                                     "--storage-driver",
                                     "vfs",
                                     "--runtime",
                                     "runc",
                                     "--cgroup-manager",
                                     "cgroupfs",
                                     "--events-backend",
                                     "none"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto c = as_user(argv);
    EXPECT_TRUE(c.status.success()) << "podman " << args[0] << ": " << c.err;
    return c;
  }

 private:
  std::string work_;
  uid_t uid_ = 0;
  gid_t gid_ = 0;
};

TEST(ImagePodman, FixtureIdIsTheRecordedId) {
  ensure_fixture();
  auto id = inspect_image_archive(fixture_dir() + "/busybox.oci.tar");
  ASSERT_TRUE(id.ok()) << id.error().message();
  EXPECT_EQ(id->format, "oci-archive");
  EXPECT_EQ(id->image_id, trim(testing::read_text(fixture_dir() + "/busybox.image-id")));
  EXPECT_EQ(id->diff_ids.size(), 1u);
}

TEST(ImagePodman, PodmanInspectAgreesForOciAndDockerArchives) {
  ensure_fixture();
  auto ours = inspect_image_archive(fixture_dir() + "/busybox.oci.tar");
  ASSERT_TRUE(ours.ok()) << ours.error().message();

  ThrowawayPodman p;
  ASSERT_FALSE(p.work().empty());
  std::string archive = p.stage(fixture_dir() + "/busybox.oci.tar", "busybox.oci.tar");
  auto load = p.podman({"load", "-q", "-i", archive});
  ASSERT_TRUE(load.status.success());
  // "Loaded image: localhost/sealrun-busybox:1" (or "Loaded image(s): ...").
  std::string out = trim(load.out);
  size_t colon = out.rfind(": ");
  ASSERT_NE(colon, std::string::npos) << out;
  std::string ref = out.substr(colon + 2);
  if (size_t comma = ref.find(','); comma != std::string::npos) ref.resize(comma);

  auto podman_id = p.podman({"image", "inspect", "--format", "{{.Id}}", ref});
  EXPECT_EQ(ours->image_id, "sha256:" + trim(podman_id.out));
  auto layers = p.podman({"image", "inspect", "--format", "{{json .RootFS.Layers}}", ref});
  auto podman_layers = nlohmann::json::parse(trim(layers.out), nullptr, false);
  ASSERT_TRUE(podman_layers.is_array()) << layers.out;
  EXPECT_EQ(podman_layers.get<std::vector<std::string>>(), ours->diff_ids);

  // The same image saved by podman in its default format (docker-archive).
  std::string docker_tar = p.work() + "/busybox.docker.tar";
  p.podman({"save", "--format", "docker-archive", "-o", docker_tar, ref});
  auto docker = inspect_image_archive(docker_tar);
  ASSERT_TRUE(docker.ok()) << docker.error().message();
  EXPECT_EQ(docker->format, "docker-archive");
  EXPECT_EQ(docker->image_id, ours->image_id);
  EXPECT_EQ(docker->diff_ids, ours->diff_ids);
  EXPECT_NE(docker->archive_sha256, ours->archive_sha256);

  // And a fresh oci-archive of the loaded image: the same identity again.
  std::string oci_again = p.work() + "/again.oci.tar";
  p.podman({"save", "--format", "oci-archive", "-o", oci_again, ref});
  auto again = inspect_image_archive(oci_again);
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_EQ(again->image_id, ours->image_id);
  EXPECT_EQ(again->diff_ids, ours->diff_ids);
}

TEST(ImagePodman, OneByteAlteredInTheFixtureLayerIsRefused) {
  ensure_fixture();
  testing::TempDir t;
  std::string copy = t / "altered.oci.tar";
  fs::copy_file(fixture_dir() + "/busybox.oci.tar", copy);
  // Flip a byte deep inside the archive: the layer (busybox itself) is by far the largest blob.
  auto size = fs::file_size(copy);
  FILE* f = std::fopen(copy.c_str(), "r+b");
  ASSERT_NE(f, nullptr);
  std::fseek(f, static_cast<long>(size / 2), SEEK_SET);
  int c = std::fgetc(f);
  std::fseek(f, static_cast<long>(size / 2), SEEK_SET);
  std::fputc(c ^ 0x01, f);
  std::fclose(f);
  auto id = inspect_image_archive(copy);
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.error().message().find("digest mismatch"), std::string::npos)
      << id.error().message();
}

}  // namespace
}  // namespace sealrun
