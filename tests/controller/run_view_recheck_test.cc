// SPDX-License-Identifier: Apache-2.0
// What the view binds from the host is checked after the job as before it, and the closure files a
// bwrap job sees are the very files that were hashed (docs/view.md, "Verification"), proven with
// the real binary (or the real pipeline in process), real bwrap and rootless podman:
// - a file inside a pinned tree and a learned closure file, both changed on the host while the job
//   waits on a FIFO the test holds, fail the run (exit 5) naming each, and the receipt records
//   the failed "(after the run)" checks;
// - a closure file replaced on the host after it was hashed and before bwrap binds it refuses the
//   run before the command's first instruction (exit 3, nothing run), naming it;
// - check_closure_bound_below() names a file that is not the one hashed, a missing one, a link.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <thread>

#include "controller/run/run_closure_bound.h"
#include "controller/run/run_pipeline.h"
#include "core/exit_codes.h"
#include "fingerprint/sha256.h"
#include "tests/controller/run_test_support.h"
#include "tests/support/temp_dir.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A closure file outside the job's private /tmp (no host file may be bound there), removed with
// its directory at the end; the directory is searchable by the job user.
struct ClosureDir {
  explicit ClosureDir(const std::string& tag)
      : path("/var/tmp/sealrun-recheck-" + std::to_string(::getpid()) + "-" + tag) {
    fs::create_directories(path + "/lib");
    fs::permissions(path, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  }
  ~ClosureDir() { fs::remove_all(path); }
  std::string path;
};

// Waits for `path` to exist while `done` is false (the run may end early); true when it exists.
// `path` under STATE/owned/ is in the controller's mount namespace: `resolve` gives where it is
// seen from here (live(), run_test_support.h), again at each look.
bool wait_for_path(const std::function<std::string()>& resolve, const std::atomic<bool>& done) {
  std::error_code ec;  // a controller gone meanwhile: its /proc/PID/root is unreachable
  for (int i = 0; i < 6000 && !done; ++i) {  // at most 120 s
    if (fs::exists(resolve(), ec)) return true;
    ::usleep(20 * 1000);
  }
  return fs::exists(resolve(), ec);
}

// The digest cache records a file only once its last change lies before the second in which it
// was hashed (git's racy-index rule, file_stamp.h); only then can a refusal name it as changed.
// Waits (on the clock, at most a second) until the second of `path`'s ctime is over.
void wait_until_settled(const std::string& path) {
  struct stat st {};
  ASSERT_EQ(::lstat(path.c_str(), &st), 0) << path;
  struct timespec now {};
  do {
    ::usleep(10 * 1000);
    ::clock_gettime(CLOCK_REALTIME_COARSE, &now);
  } while (now.tv_sec <= st.st_ctim.tv_sec);
}

std::string failed_checks(const json& receipt) {
  std::string failed;
  for (const json& v : receipt["verifications"])
    if (v["result"] == "fail") failed += v.dump() + "\n";
  return failed;
}

class ViewRecheck : public RunTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(ViewRecheck, ATreeFileAndAClosureFileChangedWhileTheJobRunsFailIt) {
  const std::string mechanism = GetParam();
  std::string tree = dir_ / "data";
  fs::create_directories(tree + "/sub");
  write_text(tree + "/a.txt", "a\n");
  write_text(tree + "/sub/b.txt", "b\n");
  wait_until_settled(tree + "/sub/b.txt");
  ClosureDir closure(mechanism);
  std::string file = closure.path + "/lib/data.txt";
  write_text(file, "closure bytes\n");
  json draft = {{"host_files", {{{"path", file}, {"sha256", sha256_hex("closure bytes\n")}}}}};
  write_text(dir_ / "draft.json", draft.dump());
  // The job makes a FIFO in its scratch and waits until the test has changed the host files.
  std::string script =
      "mkfifo /scratch/gate && cat /scratch/gate > /dev/null && cat /opt/data/sub/b.txt " + file +
      " > /out/seen.txt";
  Frozen a = freeze_for(mechanism, script, "recheck-" + mechanism + ".json",
                        {"--tree", tree + "=/opt/data", "--draft", dir_ / "draft.json"});
  const std::string id = "recheck-" + mechanism;

  std::atomic<bool> done{false};
  Captured c;
  std::thread runner([&] {
    c = run(a, id, {"--mechanism", mechanism});
    done = true;
  });
  const std::string gate = state_ + "/owned/" + id + "/scratch/gate";
  auto live_gate = [&] { return live(state_, gate); };
  bool waiting = wait_for_path(live_gate, done);
  if (waiting) {
    write_text(tree + "/sub/b.txt", "changed on the host\n");
    write_text(file, "closure changed on the host\n");
    int fd = ::open(live_gate().c_str(), O_WRONLY | O_CLOEXEC);  // the job is reading: no block
    EXPECT_GE(fd, 0) << gate;
    if (fd >= 0) ::close(fd);
  }
  runner.join();
  ASSERT_TRUE(waiting) << "the job never reached its gate: " << c.out << c.err;

  EXPECT_EQ(c.status.code, 5) << c.out << c.err;
  EXPECT_NE(c.err.find("the pinned view changed on the host during the run"), std::string::npos)
      << c.err;
  EXPECT_NE(c.err.find("trees:" + tree), std::string::npos) << c.err;
  EXPECT_NE(c.err.find(file), std::string::npos) << c.err;
  json r = receipt(id);
  EXPECT_EQ(r["state"], "failed");
  std::string failed = failed_checks(r);
  EXPECT_NE(failed.find("trees:" + tree + " (after the run)"), std::string::npos) << failed;
  EXPECT_NE(failed.find("changed: sub/b.txt"), std::string::npos) << failed;
  EXPECT_NE(failed.find("host_files (after the run)"), std::string::npos) << failed;
  EXPECT_NE(failed.find(file), std::string::npos) << failed;
  // The toolchain did not change: its check after the run passed.
  bool toolchain_after = false;
  for (const json& v : r["verifications"])
    toolchain_after = toolchain_after || (v["target"] == "toolchain.tree_sha256 (after the run)" &&
                                          v["result"] == "pass");
  EXPECT_TRUE(toolchain_after) << r["verifications"].dump(1);
}

// Under bwrap an image's root is the unpacked, content-addressed STATE/images/<hex>/rootfs: changed
// (by root: it is root's) while the job runs, the run fails naming it, like a pinned tree.
TEST_F(RunTest, AnImageRootChangedWhileTheJobRunsFailsIt) {
  Frozen a = freeze_for("podman", "mkfifo /scratch/gate && cat /scratch/gate > /dev/null",
                        "image-recheck.json");
  auto image_id = read_text(*busybox_fixture_dir() + "/busybox.image-id");
  std::string hex = image_id.substr(image_id.find(':') + 1, 64);
  const std::string id = "image-recheck";
  std::atomic<bool> done{false};
  Captured c;
  std::thread runner([&] {
    c = run(a, id, {"--mechanism", "bwrap"});
    done = true;
  });
  const std::string gate = state_ + "/owned/" + id + "/scratch/gate";
  auto live_gate = [&] { return live(state_, gate); };
  bool waiting = wait_for_path(live_gate, done);
  if (waiting) {
    write_text(state_ + "/images/" + hex + "/rootfs/etc/passwd", "changed on the host\n");
    int fd = ::open(live_gate().c_str(), O_WRONLY | O_CLOEXEC);
    EXPECT_GE(fd, 0) << gate;
    if (fd >= 0) ::close(fd);
  }
  runner.join();
  ASSERT_TRUE(waiting) << "the job never reached its gate: " << c.out << c.err;
  EXPECT_EQ(c.status.code, 5) << c.out << c.err;
  EXPECT_NE(c.err.find("image root (STATE/images/" + hex.substr(0, 12) + ") (after the run)"),
            std::string::npos)
      << c.err;
  std::string failed = failed_checks(receipt(id));
  EXPECT_NE(failed.find("image root (STATE/images/" + hex.substr(0, 12) + ") (after the run)"),
            std::string::npos)
      << failed;
}

INSTANTIATE_TEST_SUITE_P(Mechanisms, ViewRecheck, ::testing::Values("bwrap", "podman"));

// The real pipeline in process, with the real bwrap mechanism made by a factory that first
// replaces the closure file on the host: after it was hashed (stage 2), before bwrap binds it.
class ClosureSwap : public RunTest {
 protected:
  run::RunOutcome run_in_process(const Frozen& a, const std::string& id,
                                 const std::function<void()>& before_mechanism) {
    MechanismContext context;
    run::PipelineDeps deps = run::default_pipeline_deps(context);
    auto make = deps.make_mechanism;
    deps.make_mechanism = [make, before_mechanism](MechanismKind kind, const MechanismContext& c) {
      before_mechanism();
      return make(kind, c);
    };
    run::RunRequest req;
    req.admission_path = a.path;
    req.sha256 = a.sha256;
    req.id = id;
    req.state_dir = state_;
    req.mechanism = MechanismKind::kBwrap;
    // The closure bound live from the host: the start gate's check is that path's (served from
    // its pin image the closure is the image's copies, run_pin_images_test.cc).
    req.pins_live = true;
    return run::run_pipeline(req, deps);
  }
};

TEST_F(ClosureSwap, AClosureFileReplacedAfterItWasHashedIsRefusedBeforeTheJobRuns) {
  ClosureDir closure("swap");
  std::string file = closure.path + "/lib/data.txt";
  write_text(file, "closure bytes\n");
  json draft = {{"host_files", {{{"path", file}, {"sha256", sha256_hex("closure bytes\n")}}}}};
  write_text(dir_ / "draft.json", draft.dump());
  Frozen a =
      freeze("cat " + file + " > /out/seen.txt", {}, "swap.json", {"--draft", dir_ / "draft.json"});

  // Untouched: built, and the receipt says the closure bound is the one hashed.
  auto ok = run_in_process(a, "swap-none", [] {});
  ASSERT_EQ(ok.exit_code, kExitOk) << ok.receipt.reason << ok.message;
  bool bound_checked = false;
  for (const auto& v : ok.receipt.verifications)
    bound_checked = bound_checked || (v.target == "host_files (as bound in the job)" && v.pass);
  EXPECT_TRUE(bound_checked);

  // Replaced by another file (the same bytes even: what counts is which file was verified).
  int swaps = 0;
  auto refused = run_in_process(a, "swap-replaced", [&] {
    if (swaps++ > 0) return;
    std::string other = file + ".new";
    write_text(other, "closure bytes\n");
    ASSERT_EQ(::rename(other.c_str(), file.c_str()), 0);
  });
  EXPECT_EQ(refused.exit_code, kExitAdmissionRefused) << refused.receipt.reason;
  EXPECT_EQ(refused.receipt.state, "not_run");
  EXPECT_NE(refused.receipt.reason.find(file), std::string::npos) << refused.receipt.reason;
  EXPECT_NE(refused.receipt.reason.find("replaced on the host"), std::string::npos)
      << refused.receipt.reason;
  bool recorded = false;
  for (const auto& v : refused.receipt.verifications)
    recorded = recorded || (v.target == "host_files (as bound in the job)" && !v.pass &&
                            v.observed.find(file) != std::string::npos);
  EXPECT_TRUE(recorded);
  EXPECT_FALSE(fs::exists(state_ + "/results/swap-replaced/out/seen.txt"));
}

// The check itself, on a directory standing for the job's root.
TEST(CheckClosureBound, NamesEachFileThatIsNotTheOneHashed) {
  TempDir root;
  const std::string r = root.path().string();
  fs::create_directories(r + "/usr/lib");
  write_text(r + "/usr/lib/a.so", "a");
  write_text(r + "/usr/lib/b.so", "b");
  auto identity = [](const std::string& p) {
    struct stat st {};
    EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
    return admission::FileIdentity{st.st_dev, st.st_ino};
  };
  run::ClosureIdentities hashed = {{"/usr/lib/a.so", identity(r + "/usr/lib/a.so")},
                                   {"/usr/lib/b.so", identity(r + "/usr/lib/b.so")}};
  EXPECT_TRUE(run::check_closure_bound_below(r, hashed).ok());

  write_text(r + "/usr/lib/a.so.new", "a");
  ASSERT_EQ(::rename((r + "/usr/lib/a.so.new").c_str(), (r + "/usr/lib/a.so").c_str()), 0);
  auto replaced = run::check_closure_bound_below(r, hashed);
  ASSERT_FALSE(replaced.ok());
  EXPECT_NE(replaced.error().message().find("/usr/lib/a.so (the job's view binds"),
            std::string::npos)
      << replaced.error().message();
  EXPECT_EQ(replaced.error().message().find("b.so"), std::string::npos);

  fs::remove(r + "/usr/lib/b.so");
  fs::create_symlink("a.so", r + "/usr/lib/b.so");
  hashed["/usr/lib/a.so"] = identity(r + "/usr/lib/a.so");
  hashed["/usr/lib/c.so"] = {1, 1};  // never there
  auto bad = run::check_closure_bound_below(r, hashed);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("2 closure file(s)"), std::string::npos)
      << bad.error().message();
  EXPECT_NE(bad.error().message().find("/usr/lib/b.so (not a regular file"), std::string::npos)
      << bad.error().message();
  EXPECT_NE(bad.error().message().find("/usr/lib/c.so"), std::string::npos);
}

}  // namespace
}  // namespace sealrun::testing
