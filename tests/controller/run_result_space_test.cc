// /out on the kernel's bound (issue 28 item 3): as root with loop devices, the job's /out is a file
// system of the run's own, sized to result_max_bytes with result_max_inodes inodes, under bwrap and
// podman alike. A 4 GiB fallocate and 400,000 empty files against a 64 MiB / 10,000-inode /out end
// in ENOSPC inside the job, and the host holds at most that bound of it; what the job left is
// copied into results/<id>/out as it was (kinds, links, modes, holes). Also: /out and /src are
// nosuid,nodev under both mechanisms, and the receipt names the limits reached.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/controller/run_test_support.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr uint64_t kMiB = 1 << 20;

std::string stderr_tail(const json& r) { return r["commands"][0]["stderr"]["tail"]; }

bool has(const json& list, const std::string& v) {
  for (const auto& e : list)
    if (e == v) return true;
  return false;
}

class ResultSpace : public RunTest, public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    RunTest::SetUp();
    if (::geteuid() != 0) GTEST_SKIP() << "a file system of the run's own needs root";
  }
};

TEST_P(ResultSpace, FallocateAndManyFilesEndInEnospcWithinTheBound) {
  const std::string mechanism = GetParam();
  Frozen a = freeze_for(
      mechanism,
      "grep -E ' /(out|src) ' /proc/self/mountinfo >&2; "
      "fallocate -l 4G /out/big; echo fallocate-exit=$? >&2; "
      "i=0; while [ $i -lt 400000 ] && true 2>/dev/null >/out/f$i; do "
      "i=$((i+1)); done; echo made=$i >&2",
      "r40-" + mechanism + ".json",
      {"--set", "limits.result_max_bytes=67108864", "--set", "limits.result_max_inodes=10000"});
  const std::string id = "r40-" + mechanism;
  auto c = run(a, id, {"--mechanism", mechanism});
  json r = receipt(id);
  ASSERT_TRUE(r["result_space"].is_object()) << c.out << c.err << r.dump(1);
  EXPECT_EQ(r["result_space"]["kind"], "filesystem") << r["result_space"].dump();
  EXPECT_EQ(r["result_space"]["size_bytes"], 64 * kMiB);
  EXPECT_EQ(r["result_space"]["inodes"], 10000);
  std::string err = stderr_tail(r);
  EXPECT_NE(err.find("No space left on device"), std::string::npos) << err;
  EXPECT_EQ(err.find("fallocate-exit=0"), std::string::npos) << err;
  size_t at = err.find("made=");
  ASSERT_NE(at, std::string::npos) << err;
  uint64_t made = std::stoull(err.substr(at + 5));
  EXPECT_LT(made, 10000u) << err;
  EXPECT_GT(made, 9000u) << err;
  // Every bind the job writes through is nosuid,nodev (bwrap's rule, now podman's too).
  for (const char* mount : {" /out ", " /src "}) {
    size_t line = err.find(mount);
    ASSERT_NE(line, std::string::npos) << mount << err;
    std::string text = err.substr(line, err.find('\n', line) - line);
    EXPECT_NE(text.find("nosuid"), std::string::npos) << text;
    EXPECT_NE(text.find("nodev"), std::string::npos) << text;
  }
  // The host holds at most the bound: what was taken into results/<id>/out, and every census
  // sample of the result tree.
  uint64_t blocks = 0, entries = 0;
  for (const auto& e : fs::recursive_directory_iterator(state_ + "/results/" + id + "/out")) {
    struct stat st {};
    ASSERT_EQ(::lstat(e.path().c_str(), &st), 0);
    blocks += static_cast<uint64_t>(st.st_blocks) * 512;
    ++entries;
  }
  EXPECT_LE(blocks, 64 * kMiB);
  EXPECT_LE(entries, 10000u);
  for (const auto& s : r["samples"]) EXPECT_LE(s["result_bytes"].get<uint64_t>(), 65 * kMiB) << s;
  EXPECT_TRUE(has(r["limits_hit"], "result_space")) << r["limits_hit"];
  // Nothing of the file system is left.
  EXPECT_FALSE(fs::exists(state_ + "/owned/" + id + "+out"));
  EXPECT_FALSE(fs::exists(state_ + "/ownedfs/" + id + "+out.img"));
  EXPECT_FALSE(fs::exists(state_ + "/ownedfs/" + id + "+out.json"));
}

INSTANTIATE_TEST_SUITE_P(Mechanisms, ResultSpace, ::testing::Values("bwrap", "podman"));

// What the job left is what results/<id>/out holds: kinds, hard links, modes, holes.
TEST_F(RunTest, TheOutputsAreTakenOffTheResultSpaceAsTheyWere) {
  if (::geteuid() != 0) GTEST_SKIP() << "a file system of the run's own needs root";
  Frozen a = freeze(
      "cd /out && echo hello > a && ln a b && ln -s a s && mkfifo p && chmod 0751 a && "
      "truncate -s 100M sparse && mkdir -p d/e/f && echo deep > d/e/f/g && chmod 0700 d",
      {}, "copy.json");
  auto c = run(a, "copy");
  ASSERT_EQ(c.status.code, 0) << c.out << c.err;
  json r = receipt("copy");
  EXPECT_EQ(r["result_space"]["kind"], "filesystem") << r["result_space"].dump();
  const std::string out = state_ + "/results/copy/out/";
  struct stat sa {
  }, sb{}, ss{}, sp{}, sd{}, sg{};
  ASSERT_EQ(::lstat((out + "a").c_str(), &sa), 0);
  ASSERT_EQ(::lstat((out + "b").c_str(), &sb), 0);
  EXPECT_EQ(sa.st_ino, sb.st_ino);  // still one file
  EXPECT_EQ(sa.st_mode & 07777, 0751u);
  ASSERT_EQ(::lstat((out + "s").c_str(), &ss), 0);
  EXPECT_TRUE(S_ISLNK(ss.st_mode));
  EXPECT_EQ(fs::read_symlink(out + "s"), "a");
  ASSERT_EQ(::lstat((out + "p").c_str(), &sp), 0);
  EXPECT_TRUE(S_ISFIFO(sp.st_mode));
  ASSERT_EQ(::lstat((out + "sparse").c_str(), &sd), 0);
  EXPECT_EQ(sd.st_size, 100 * static_cast<off_t>(kMiB));
  EXPECT_LT(sd.st_blocks, 64);  // still a hole, not 100 MiB of zeros on the host
  ASSERT_EQ(::lstat((out + "d/e/f/g").c_str(), &sg), 0);
  struct stat sdir {};
  ASSERT_EQ(::lstat((out + "d").c_str(), &sdir), 0);
  EXPECT_EQ(sdir.st_mode & 07777, 0700u);
  // The output list names the second name as a link of the first.
  bool linked = false;
  for (const auto& o : r["outputs"])
    linked = linked || (o["path"] == "b" && o.contains("hardlink_of"));
  EXPECT_TRUE(linked) << r["outputs"].dump(1);
}

// A fork refused at pids.max is in the receipt's limits_hit.
TEST_F(RunTest, APidsLimitHitIsInTheReceipt) {
  if (::geteuid() != 0) GTEST_SKIP() << "resource groups need root here";
  Frozen a = freeze("for i in $(seq 60); do sleep 3 & done 2>/dev/null; wait; true",
                    {"limits.pids_max=16"}, "pids.json");
  auto c = run(a, "pids");
  json r = receipt("pids");
  EXPECT_TRUE(has(r["limits_hit"], "pids")) << c.out << c.err << r["limits_hit"];
  EXPECT_FALSE(has(r["limits_hit"], "memory")) << r["limits_hit"];
}

// `admit check` refuses what `run` refuses: a writable mount on a reserved system path.
TEST_F(RunTest, AdmitCheckRefusesAViewRunRefuses) {
  Frozen a = freeze("true", {"mounts.scratch=/etc"}, "etc-scratch.json");
  auto check = sealrun({"admit", "check", a.path, "--sha256", a.sha256, "--state-dir", state_});
  EXPECT_EQ(check.status.code, 3) << check.out << check.err;
  EXPECT_NE(check.err.find("would refuse its view"), std::string::npos) << check.err;
  auto c = run(a, "etc-scratch");
  EXPECT_EQ(c.status.code, 4) << c.out << c.err;
}

}  // namespace
}  // namespace sealrun::testing
