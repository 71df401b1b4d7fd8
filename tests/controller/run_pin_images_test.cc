// SPDX-License-Identifier: Apache-2.0
// Pinned bytes are immutable while the job reads them (docs/view.md, "How pinned bytes are
// served"), proven with the real binary, real bwrap, real loop devices and real erofs:
// - a file of the toolchain, of a --tree and of the learned closure, each changed on the host
//   while the job runs and put back (bytes and mtime) before it ends: the job reads the pinned
//   bytes, never the changed ones, and every view entry says it was served from an image — under
//   bwrap and under rootless podman (whose images are attached in the controller's namespace
//   only, and gone after the run and after `sweep` of a killed one);
// - a second run uses the cached image (nothing built again);
// - a cached image changed in place is found, not used, and built again from the verified tree;
// - after the runs no loop device of theirs is left and no erofs mount is in the host's table;
// - `sweep --images` removes an unused pin image and keeps a held one;
// - sweep_pin_loops() detaches a leftover loop device named for a killed run.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/loop.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "containment/ownedfs/loop_device.h"
#include "containment/pin_mount.h"
#include "fingerprint/sha256.h"
#include "tests/controller/run_test_support.h"
#include "tests/support/temp_dir.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// `path` under STATE/owned/ is in the controller's mount namespace: `resolve` gives where it is
// seen from here (live(), run_test_support.h), again at each look.
bool wait_for_path(const std::function<std::string()>& resolve, const std::atomic<bool>& done) {
  std::error_code ec;
  for (int i = 0; i < 6000 && !done; ++i) {  // at most 120 s
    if (fs::exists(resolve(), ec)) return true;
    ::usleep(20 * 1000);
  }
  return fs::exists(resolve(), ec);
}

void open_gate(const std::string& fifo) {
  int fd = ::open(fifo.c_str(), O_WRONLY | O_CLOEXEC);  // the job is reading it: no block
  EXPECT_GE(fd, 0) << fifo;
  if (fd >= 0) ::close(fd);
}

// Rewrites `path` in place (same inode, same length) and returns its stat before.
struct stat change_in_place(const std::string& path, const std::string& bytes) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  EXPECT_GE(fd, 0) << path;
  EXPECT_EQ(::pwrite(fd, bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
  ::close(fd);
  return st;
}

// Puts `bytes` back and the mtime it had: nothing a stat or hash after the job could notice.
void restore(const std::string& path, const std::string& bytes, const struct stat& before) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0) << path;
  EXPECT_EQ(::pwrite(fd, bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
  EXPECT_EQ(::ftruncate(fd, static_cast<off_t>(bytes.size())), 0);
  struct timespec times[2] = {before.st_atim, before.st_mtim};
  EXPECT_EQ(::futimens(fd, times), 0);
  ::close(fd);
}

// Loop devices bound (LOOP_GET_STATUS64) whose name is a pin image's of run `id`.
int pin_loops_of(const std::string& id) {
  int n = 0;
  for (const auto& e : fs::directory_iterator("/sys/block")) {
    std::string name = e.path().filename();
    if (name.rfind("loop", 0) != 0) continue;
    int fd = ::open(("/dev/" + name).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    struct loop_info64 info {};
    if (::ioctl(fd, LOOP_GET_STATUS64, &info) == 0 &&
        std::string(reinterpret_cast<char*>(info.lo_file_name)) == kPinLoopPrefix + id)
      ++n;
    ::close(fd);
  }
  return n;
}

// The kernel releases a loop device when the last mount of it goes (autoclear), which follows the
// job's namespaces: allowed a moment after the controller is done.
int pin_loops_left(const std::string& id) {
  int n = pin_loops_of(id);
  for (int i = 0; i < 100 && n > 0; ++i) {
    ::usleep(20 * 1000);
    n = pin_loops_of(id);
  }
  return n;
}

bool host_has_erofs_mount() {
  return read_text("/proc/self/mountinfo").find(" - erofs ") != std::string::npos;
}

// Processes (any mount namespace) that have a mount below `dir` (a run's pins directory, where
// its podman's images are attached), each "pid: mountinfo line".
std::vector<std::string> mounts_below(const std::string& dir) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    std::string pid = e.path().filename();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "mountinfo");
    for (std::string line; std::getline(in, line);)
      if (line.find(" " + dir + "/") != std::string::npos) found.push_back(pid + ": " + line);
  }
  return found;
}

std::string verification_of(const json& r, const std::string& start) {
  for (const json& v : r["verifications"])
    if (v["target"].get<std::string>().rfind(start, 0) == 0) return v.dump();
  return "";
}

class PinImages : public RunTest {
 protected:
  void SetUp() override {
    RunTest::SetUp();
    closure_dir_ = "/var/tmp/sealrun-pin-images-" + std::to_string(::getpid());
    fs::create_directories(closure_dir_ + "/lib");
    fs::permissions(closure_dir_,
                    fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
    closure_file_ = closure_dir_ + "/lib/c.txt";
    write_text(closure_file_, "closure pinned\n");
    tree_ = dir_ / "data";
    fs::create_directories(tree_);
    write_text(tree_ + "/a.txt", "tree pinned\n");
    json draft = {
        {"host_files", {{{"path", closure_file_}, {"sha256", sha256_hex("closure pinned\n")}}}}};
    write_text(dir_ / "draft.json", draft.dump());
  }
  void TearDown() override { fs::remove_all(closure_dir_); }

  Frozen freeze_reading(const std::string& name, const std::string& mechanism = "bwrap") {
    // The job waits (gate 1) while the host files are changed, reads them, says so (read), then
    // waits (gate 2) while they are put back.
    std::string script =
        "mkfifo /scratch/g1 /scratch/g2 && cat /scratch/g1 > /dev/null && cat /opt/data/a.txt "
        "/opt/toolchain/tool.txt " +
        closure_file_ + " > /out/seen.txt && : > /scratch/read && cat /scratch/g2 > /dev/null";
    return freeze_for(mechanism, script, name,
                      {"--tree", tree_ + "=/opt/data", "--draft", dir_ / "draft.json"});
  }

  // ACCEPTANCE 39 under `mechanism`: see the test below.
  void change_and_restore(const std::string& mechanism, const std::string& id);

  std::string closure_dir_, closure_file_, tree_;
};

void PinImages::change_and_restore(const std::string& mechanism, const std::string& id) {
  Frozen a = freeze_reading(id + ".json", mechanism);
  std::atomic<bool> done{false};
  Captured c;
  std::thread runner([&] {
    c = run(a, id, {"--mechanism", mechanism});
    done = true;
  });
  const std::string scratch = state_ + "/owned/" + id + "/scratch";
  auto in_scratch = [&](const std::string& name) { return live(state_, scratch + "/" + name); };
  bool at_gate = wait_for_path([&] { return in_scratch("g2"); }, done);
  bool read = false;
  if (at_gate) {
    auto t = change_in_place(tree_ + "/a.txt", "TREE CHANGED\n");
    auto tc = change_in_place(toolchain_ + "/tool.txt", "A TOOLCHAIN CHANGE\n");
    auto cl = change_in_place(closure_file_, "CLOSURE CHANGE\n");
    open_gate(in_scratch("g1"));
    read = wait_for_path([&] { return in_scratch("read"); }, done);
    restore(tree_ + "/a.txt", "tree pinned\n", t);
    restore(toolchain_ + "/tool.txt", "a toolchain file\n", tc);
    restore(closure_file_, "closure pinned\n", cl);
    if (read) open_gate(in_scratch("g2"));
  }
  runner.join();
  ASSERT_TRUE(at_gate && read) << "the job never reached its gates: " << c.out << c.err;
  EXPECT_EQ(c.status.code, 0) << c.out << c.err;
  EXPECT_EQ(read_text(state_ + "/results/" + id + "/out/seen.txt"),
            "tree pinned\na toolchain file\nclosure pinned\n");
  json r = receipt(id);
  EXPECT_EQ(r["state"], "built");
  for (const json& e : r["view"]) {
    std::string kind = e["kind"];
    if (kind == "tree" || kind == "toolchain" || kind == "closure") {
      EXPECT_EQ(e.value("served", ""), "image") << e.dump();
    }
    if (kind == "source") {
      EXPECT_EQ(e.value("served", ""), "copy") << e.dump();
    }
  }
  EXPECT_NE(verification_of(r, "pin image of tree /opt/data"), "") << r["verifications"].dump(1);
  EXPECT_NE(verification_of(r, "pin image of the closure (1 files)"), "");
  EXPECT_EQ(pin_loops_left(id), 0);
  EXPECT_FALSE(host_has_erofs_mount());
  EXPECT_EQ(mounts_below(state_ + "/owned/" + id + "/pins"), std::vector<std::string>{});
}

TEST_F(PinImages, AChangeMadeAndUndoneOnTheHostDuringTheJobNeverReachesIt) {
  change_and_restore("bwrap", "pin-acc39");
}

// Podman binds by path: the images are attached below the run's owned root in the controller's
// private mount namespace before podman's pause process copies it, and unmounted at cleanup.
TEST_F(PinImages, UnderPodmanTooAChangeMadeAndUndoneOnTheHostNeverReachesTheJob) {
  change_and_restore("podman", "pin-acc39-podman");
  json r = receipt("pin-acc39-podman");
  std::string cleanup = r["cleanup"].dump();
  EXPECT_NE(cleanup.find("unmounted the pin image at"), std::string::npos) << cleanup;
  EXPECT_EQ(cleanup.find("pin images:"), std::string::npos) << cleanup;
}

// A podman run killed with its controller while the job reads from the images: `sweep` ends the
// run's podman processes, and with the last of them the controller's namespace and the images'
// mounts go; nothing of them is left in any process's mount table, and no loop device.
TEST_F(PinImages, SweepOfAKilledPodmanRunLeavesNoPinImageMounted) {
  Frozen a = freeze_reading("killed.json", "podman");
  const std::string id = "pin-killed-podman";
  SpawnOptions o = sealrun_options({"run", a.path, "--sha256", a.sha256, "--id", id, "--state-dir",
                                    state_, "--mechanism", "podman"});
  auto controller = spawn(o);
  ASSERT_TRUE(controller.ok()) << controller.error().message();
  std::atomic<bool> done{false};
  const std::string scratch = state_ + "/owned/" + id + "/scratch";
  bool at_gate = wait_for_path([&] { return live(state_, scratch + "/g1"); }, done);
  const std::string pins = state_ + "/owned/" + id + "/pins";
  // While the job runs, the images are mounted in the run's namespaces and nowhere else.
  std::vector<std::string> during = mounts_below(pins);
  bool ours_only = !during.empty();
  for (const auto& m : during)
    ours_only = ours_only && m.find(" - erofs ") != std::string::npos &&
                m.find(" ro,") != std::string::npos;
  EXPECT_FALSE(host_has_erofs_mount());
  (void)controller->signal(SIGKILL);
  (void)controller->wait();
  ASSERT_TRUE(at_gate) << "the job never reached its gate";
  EXPECT_TRUE(ours_only) << ::testing::PrintToString(during);
  auto s = sealrun({"sweep", "--state-dir", state_});
  EXPECT_EQ(s.status.code, 0) << s.out << s.err;
  EXPECT_NE(s.out.find("sweep: nothing left behind"), std::string::npos) << s.out << s.err;
  std::vector<std::string> left;
  for (int i = 0; i < 100; ++i) {  // the namespace goes when its last process is reaped
    left = mounts_below(pins);
    if (left.empty()) break;
    ::usleep(20 * 1000);
  }
  EXPECT_EQ(left, std::vector<std::string>{}) << s.out;
  EXPECT_EQ(pin_loops_left(id), 0);
  EXPECT_FALSE(fs::exists(state_ + "/owned/" + id));
}

TEST_F(PinImages, ASecondRunUsesTheCachedImageAndAChangedOneIsBuiltAgain) {
  Frozen a = freeze_for("bwrap", "cat /opt/data/a.txt > /out/seen.txt", "cache.json",
                        {"--tree", tree_ + "=/opt/data"});
  auto first = run(a, "pin-cache-1", {"--mechanism", "bwrap"});
  ASSERT_EQ(first.status.code, 0) << first.out << first.err;
  std::string built = verification_of(receipt("pin-cache-1"), "pin image of tree /opt/data");
  EXPECT_NE(built.find("built now in"), std::string::npos) << built;

  // The tree's image, named by its pinned digest.
  std::string pin;
  const json r1 = receipt("pin-cache-1");
  for (const json& e : r1["view"])
    if (e["job_path"] == "/opt/data") pin = e["pin"];
  ASSERT_EQ(pin.size(), 71u) << r1["view"].dump(1);
  const std::string image = state_ + "/pins/tree-" + pin.substr(7) + "/image.erofs";
  struct stat before {};
  ASSERT_EQ(::stat(image.c_str(), &before), 0);

  auto second = run(a, "pin-cache-2", {"--mechanism", "bwrap"});
  ASSERT_EQ(second.status.code, 0) << second.out << second.err;
  std::string reused = verification_of(receipt("pin-cache-2"), "pin image of tree /opt/data");
  EXPECT_NE(reused.find("identity as recorded"), std::string::npos) << reused;
  struct stat after {};
  ASSERT_EQ(::stat(image.c_str(), &after), 0);
  EXPECT_EQ(before.st_ino, after.st_ino);  // not built again

  // Tampered in place (a byte at the end of the first block): found, never used, built again.
  {
    int fd = ::open(image.c_str(), O_WRONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0) << image;
    ASSERT_EQ(::pwrite(fd, "x", 1, 4000), 1);
    ::close(fd);
  }
  auto third = run(a, "pin-cache-3", {"--mechanism", "bwrap"});
  ASSERT_EQ(third.status.code, 0) << third.out << third.err;
  json r = receipt("pin-cache-3");
  std::string rebuilt = verification_of(r, "pin image of tree /opt/data");
  EXPECT_NE(rebuilt.find("built now in"), std::string::npos) << rebuilt;
  std::string notes = r["notes"].dump();
  EXPECT_NE(notes.find("was not used"), std::string::npos) << notes;
  EXPECT_NE(notes.find("not the recorded"), std::string::npos) << notes;
  EXPECT_EQ(read_text(state_ + "/results/pin-cache-3/out/seen.txt"), "tree pinned\n");
  for (const char* id : {"pin-cache-1", "pin-cache-2", "pin-cache-3"})
    EXPECT_EQ(pin_loops_left(id), 0) << id;
  EXPECT_FALSE(host_has_erofs_mount());
}

// `sweep --images` removes a pin image no run holds and keeps one that is held (a run holds
// pins/<key> with a shared flock while its job may see the image); the next run builds it again.
TEST_F(PinImages, SweepRemovesAnUnusedPinImageAndKeepsAHeldOne) {
  Frozen a = freeze_for("bwrap", "cat /opt/data/a.txt > /out/seen.txt", "swept.json",
                        {"--tree", tree_ + "=/opt/data"});
  auto first = run(a, "pin-swept-1", {"--mechanism", "bwrap"});
  ASSERT_EQ(first.status.code, 0) << first.out << first.err;
  std::string pin;
  const json r1 = receipt("pin-swept-1");
  for (const json& e : r1["view"])
    if (e["job_path"] == "/opt/data") pin = e["pin"];
  ASSERT_EQ(pin.size(), 71u);
  const std::string key = "pins/tree-" + pin.substr(7);
  ASSERT_TRUE(fs::exists(state_ + "/" + key + "/image.erofs"));
  auto sweep_outcome = [&] {
    auto c = sealrun({"sweep", "--images", "--json", "--state-dir", state_});
    json doc = json::parse(c.out, nullptr, false);
    if (doc.is_discarded()) return "(not JSON) " + c.out + c.err;
    for (const json& s : doc["actions"])
      if (s["what"] == key) return s["outcome"].get<std::string>();
    return "(not listed) " + c.out;
  };
  {
    int held = ::open((state_ + "/" + key).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ASSERT_GE(held, 0);
    ASSERT_EQ(::flock(held, LOCK_SH), 0);  // as a run whose job may see it
    std::string kept = sweep_outcome();
    ::close(held);
    EXPECT_EQ(kept.rfind("kept: ", 0), 0u) << kept;
    EXPECT_TRUE(fs::exists(state_ + "/" + key + "/image.erofs"));
  }
  std::string removed = sweep_outcome();
  EXPECT_EQ(removed.rfind("removed", 0), 0u) << removed;
  EXPECT_FALSE(fs::exists(state_ + "/" + key));
  auto second = run(a, "pin-swept-2", {"--mechanism", "bwrap"});
  ASSERT_EQ(second.status.code, 0) << second.out << second.err;
  std::string built = verification_of(receipt("pin-swept-2"), "pin image of tree /opt/data");
  EXPECT_NE(built.find("built now in"), std::string::npos) << built;
  EXPECT_EQ(read_text(state_ + "/results/pin-swept-2/out/seen.txt"), "tree pinned\n");
}

// What a killed controller could leave: a loop device named for its run, bound to an image, used
// by nothing. Sweep detaches it; one of another run is not touched.
TEST(SweepPinLoops, DetachesTheLoopDevicesOfThatRunOnly) {
  TempDir dir;
  std::string tree = (dir.path() / "t").string();
  fs::create_directories(tree);
  write_text(tree + "/f", "f\n");
  std::string image = (dir.path() / "i.erofs").string();
  ASSERT_EQ(std::system(("mkfs.erofs --quiet " + image + " " + tree + " >/dev/null").c_str()), 0);
  int fd = ::open(image.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  // Without autoclear, as a device that outlived its user would be.
  auto mine = ownedfs::attach_loop("/dev", fd, std::string(kPinLoopPrefix) + "killed-run");
  auto other = ownedfs::attach_loop("/dev", fd, std::string(kPinLoopPrefix) + "other-run");
  ASSERT_TRUE(mine.ok() && other.ok());
  for (auto* l : {&*mine, &*other}) {
    struct loop_info64 info {};
    ASSERT_EQ(::ioctl(l->fd.get(), LOOP_GET_STATUS64, &info), 0);
    info.lo_flags &= ~static_cast<uint32_t>(LO_FLAGS_AUTOCLEAR);
    ASSERT_EQ(::ioctl(l->fd.get(), LOOP_SET_STATUS64, &info), 0);
    l->fd.reset();
  }
  EXPECT_EQ(pin_loops_of("killed-run"), 1);
  auto steps = sweep_pin_loops("killed-run");
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].outcome, "detached (LOOP_CLR_FD)");
  EXPECT_FALSE(steps[0].left);
  EXPECT_EQ(pin_loops_of("killed-run"), 0);
  EXPECT_EQ(pin_loops_of("other-run"), 1);
  EXPECT_TRUE(ownedfs::detach_loop(other->path).ok());
  ::close(fd);
}

}  // namespace
}  // namespace sealrun::testing
