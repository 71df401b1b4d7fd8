// SPDX-License-Identifier: Apache-2.0
// The unpacked image root under bwrap is proven before every use (docs/view.md): the digest of
// what was unpacked is recorded beside it, the next run verifies the rootfs against it through the
// digest cache (a stat walk), and a rootfs changed since — or one without a recorded digest — is
// replaced from the pinned archive before the job sees it — unless another run holds it (then the
// run is refused). `sweep --images` removes only roots no run holds. Real binary, real bwrap.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/process.h"
#include "core/syscall.h"
#include "tests/controller/run_test_support.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class ImageCacheTest : public RunTest {
 protected:
  void SetUp() override {
    RunTest::SetUp();
    auto built = busybox_fixture_dir();
    ASSERT_TRUE(built.ok()) << built.error().message();
    fixture_ = *built;
    frozen_ = freeze_image("cat /etc/passwd > /out/passwd.txt", "image.json");
    std::string image_id = read_text(fixture_ + "/busybox.image-id");
    while (!image_id.empty() && image_id.back() == '\n') image_id.pop_back();
    images_ = state_ + "/images/" + image_id.substr(7);
  }

  Frozen freeze_image(const std::string& script, const std::string& name) {
    std::vector<std::string> args = freeze_args(name);
    args.insert(args.end(),
                {"--image", fixture_ + "/busybox.oci.tar", "--", "/bin/sh", "-c", script});
    auto c = sealrun(args);
    EXPECT_EQ(c.status.code, 0) << c.err;
    return {dir_ / name, c.out.substr(0, 64)};
  }

  // `sweep --images --json`: the outcome of the step for this image's directory.
  std::string sweep_images_outcome() {
    auto c = sealrun({"sweep", "--images", "--json", "--state-dir", state_});
    json doc = json::parse(c.out);
    for (const json& a : doc["actions"])
      if (a["what"] == "images/" + fs::path(images_).filename().string()) return a["outcome"];
    return "(not listed) " + c.out;
  }

  json bwrap_run(const std::string& id) {
    auto r = run(frozen_, id, {"--mechanism", "bwrap"});
    EXPECT_EQ(r.status.code, 0) << r.out << r.err;
    EXPECT_EQ(read_text(state_ + "/results/" + id + "/out/passwd.txt"),
              "root:x:0:0:root:/:/bin/sh\n")
        << "the image's own /etc/passwd";
    return receipt(id);
  }

  // The verification of the image root listed in `r`, by the end of its target.
  static json image_check(const json& r) {
    for (const json& v : r["verifications"])
      if (v["target"].get<std::string>().rfind("image root", 0) == 0) return v;
    return json();
  }

  std::string fixture_;
  Frozen frozen_;
  std::string images_;
};

TEST_F(ImageCacheTest, LaterRunsVerifyTheUnpackedRootByAStatWalk) {
  json first = bwrap_run("i1");
  json v1 = image_check(first);
  ASSERT_FALSE(v1.is_null()) << first["verifications"].dump();
  EXPECT_NE(v1["target"].get<std::string>().find("unpacked now"), std::string::npos) << v1;
  std::string recorded = read_text(images_ + "/rootfs.tree");
  ASSERT_EQ(recorded.size(), 65u);
  EXPECT_EQ(v1["expected"], recorded.substr(0, 64));

  // Past the digest cache's racy window (files changed within the second they were hashed in
  // are hashed again): the second run hashes the rootfs and fills the cache, the third only stats.
  ::sleep(1);
  for (const char* id : {"i2", "i3"}) {
    json r = bwrap_run(id);
    json v = image_check(r);
    ASSERT_FALSE(v.is_null()) << r["verifications"].dump();
    EXPECT_EQ(v["result"], "pass");
    EXPECT_EQ(v["observed"], recorded.substr(0, 64));
    uint64_t by_stat = 0;
    for (const json& p : r["pin_cache"])
      if (p["root"] == images_ + "/rootfs") by_stat = p["checked_by_stat"].get<uint64_t>();
    if (std::string(id) == "i3") {
      EXPECT_GT(by_stat, 0u) << r["pin_cache"].dump();
    }
  }
}

TEST_F(ImageCacheTest, AChangedRootIsUnpackedAgainBeforeTheJobSeesIt) {
  bwrap_run("c1");
  {
    std::ofstream passwd(images_ + "/rootfs/etc/passwd", std::ios::app);
    passwd << "intruder:x:0:0::/:/bin/sh\n";
  }
  json r = bwrap_run("c2");  // checks the job read the image's own /etc/passwd
  EXPECT_EQ(r["state"], "built");
  bool warned = false;
  for (const json& n : r["notes"])
    warned = warned || n.get<std::string>().find("unpacked again") != std::string::npos;
  EXPECT_TRUE(warned) << r["notes"].dump();
  json v = image_check(r);
  ASSERT_FALSE(v.is_null());
  EXPECT_EQ(v["result"], "pass");
  EXPECT_NE(v["target"].get<std::string>().find("unpacked now"), std::string::npos) << v;
  EXPECT_EQ(read_text(images_ + "/rootfs/etc/passwd"), "root:x:0:0:root:/:/bin/sh\n");
}

TEST_F(ImageCacheTest, ARootWithoutARecordedDigestIsUnpackedAgain) {
  bwrap_run("u1");
  fs::remove(images_ + "/rootfs.tree");
  json r = bwrap_run("u2");
  json v = image_check(r);
  ASSERT_FALSE(v.is_null());
  EXPECT_NE(v["target"].get<std::string>().find("unpacked now"), std::string::npos) << v;
  EXPECT_TRUE(fs::exists(images_ + "/rootfs.tree"));
}

// A changed root that another run holds (here: this test, with the same shared flock a run takes)
// is not replaced under it: the run is refused before anything runs, naming the directory.
TEST_F(ImageCacheTest, AChangedRootInUseIsNotReplacedAndTheRunIsRefused) {
  bwrap_run("h1");
  int held = ::open(images_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(held, 0);
  ASSERT_EQ(::flock(held, LOCK_SH), 0);
  {
    std::ofstream passwd(images_ + "/rootfs/etc/passwd", std::ios::app);
    passwd << "intruder:x:0:0::/:/bin/sh\n";
  }
  auto r = run(frozen_, "h2", {"--mechanism", "bwrap"});
  EXPECT_EQ(r.status.code, 4) << r.out << r.err;
  EXPECT_NE(r.err.find("in use by another run"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(state_ + "/results/h2/out/passwd.txt"));
  ::close(held);
}

// A run holds its image root while the job may see it: `sweep --images` keeps it then, and
// removes it once no run uses it; the next run unpacks it again.
TEST_F(ImageCacheTest, SweepImagesKeepsARootInUseAndRemovesAnUnusedOne) {
  Frozen waiting = freeze_image(": > /out/started; exec sleep 60", "waiting.json");
  SpawnOptions o = sealrun_options({"run", waiting.path, "--sha256", waiting.sha256, "--id",
                                    "holder", "--state-dir", state_, "--mechanism", "bwrap"});
  o.stdout_fd = o.stderr_fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  auto controller = spawn(o);
  ::close(o.stdout_fd);
  ASSERT_TRUE(controller.ok()) << controller.error().message();
  // Whatever fails below, the controller is stopped the way a person would (SIGTERM: it stops the
  // job and removes its owned file system), not left behind with the temporary directory.
  struct StopController {
    Child& c;
    ~StopController() {
      if (!c.running()) return;
      ::kill(c.pid(), SIGTERM);
      (void)c.wait();
    }
  } stop_controller{*controller};
  auto started = [&] { return fs::exists(live_out_dir(state_, "holder") + "/started"); };
  int64_t deadline = monotonic_ms() + 60000;
  while (!started() && monotonic_ms() < deadline) ::usleep(50 * 1000);
  ASSERT_TRUE(started()) << "the job did not start";
  std::string kept = sweep_images_outcome();
  EXPECT_EQ(kept.rfind("kept: ", 0), 0u) << kept;
  EXPECT_TRUE(fs::exists(images_ + "/rootfs/bin/busybox"));

  ASSERT_EQ(::kill(controller->pid(), SIGTERM), 0);
  ASSERT_TRUE(controller->wait().ok());
  std::string removed = sweep_images_outcome();
  EXPECT_EQ(removed.rfind("removed", 0), 0u) << removed;
  EXPECT_FALSE(fs::exists(images_));

  json r = bwrap_run("after");
  json v = image_check(r);
  ASSERT_FALSE(v.is_null());
  EXPECT_NE(v["target"].get<std::string>().find("unpacked now"), std::string::npos) << v;
}

}  // namespace
}  // namespace sealrun::testing
