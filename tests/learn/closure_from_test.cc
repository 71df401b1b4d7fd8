// SPDX-License-Identifier: Apache-2.0
// Closures for CI, end to end through the built binary: `admit freeze --learn` without a
// toolchain (the learned closure is the toolchain, and the receipt says so), and `admit freeze
// --closure-from`, which pins another admission's closure again for a new source without
// learning or root: a commit that does not compile is admitted and fails at run (exit 5) with
// the compiler's message in its receipt, one that compiles builds the same outputs, a file of the
// closure changed since is named, and one that vanished is refused with nothing written.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "fingerprint/sha256.h"
#include "tests/controller/run_test_support.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kBuildSh =
    "set -e\n"
    "gcc -O1 -c main.c -o /scratch/main.o\n"
    "gcc /scratch/main.o -o /out/prog\n"
    "/out/prog > /out/said.txt\n";
constexpr const char* kGoodMain =
    "#include <stdio.h>\nint main(void) { printf(\"%d\\n\", 6 * 7); return 0; }\n";
constexpr const char* kBrokenMain =
    "#include <stdio.h>\nint main(void) { return sealrun_no_such_symbol; }\n";

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

class ClosureFromTest : public RunTest {
 public:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "--learn needs root (fanotify); CI runs as root";
    if (::access("/usr/bin/gcc", X_OK) != 0) GTEST_SKIP() << "gcc is not installed";
    RunTest::SetUp();
    fs::remove(src_ + "/input.txt");
    write_c_source(src_, kGoodMain);
  }

  static void write_c_source(const std::string& dir, const char* main_c) {
    fs::create_directories(dir);
    write_text(dir + "/build.sh", kBuildSh);
    write_text(dir + "/main.c", main_c);
  }

  // The admit-freeze arguments both ways share: no --toolchain.
  std::vector<std::string> freeze_base(const std::string& name, const std::string& source) const {
    return {"admit",       "freeze",
            "--out",       dir_ / name,
            "--source",    source,
            "--state-dir", state_,
            "--env",       "PATH=/usr/bin:/bin",
            "--set",       "limits.wall_clock_s=120"};
  }

  Captured learn(const std::string& name, const std::vector<std::string>& argv,
                 const std::vector<std::string>& extra = {}) {
    auto args = freeze_base(name, src_);
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"--json", "--learn", "--"});
    args.insert(args.end(), argv.begin(), argv.end());
    return sealrun(args, std::nullopt, 300000);
  }

  Captured closure_from(const std::string& from, const std::string& name, const std::string& source,
                        const std::vector<std::string>& extra = {}) {
    auto args = freeze_base(name, source);
    args.insert(args.end(), {"--closure-from", dir_ / from});
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"--", "/bin/sh", "build.sh"});
    return sealrun(args, std::nullopt, 300000);
  }

  Frozen frozen(const std::string& name, const Captured& c) {
    std::string sha = c.out.rfind('{', 0) == 0 ? json::parse(c.out).at("sha256").get<std::string>()
                                               : c.out.substr(0, 64);
    return {dir_ / name, sha};
  }
};

// The learned closure is the toolchain: no toolchain key, no toolchain in the view or the inputs,
// and a verification that says what stands in for it.
TEST_F(ClosureFromTest, LearnWithoutAToolchainPinsTheClosureAsTheToolchain) {
  auto c = learn("learned.json", {"/bin/sh", "build.sh"});
  ASSERT_EQ(c.status.code, 0) << c.err;
  json doc = read_json(dir_ / "learned.json");
  EXPECT_FALSE(doc.contains("toolchain")) << doc.dump();
  size_t files = doc.at("host_files").size();
  ASSERT_GT(files, 10u);

  auto r = run(frozen("learned.json", c), "l1");
  ASSERT_EQ(r.status.code, 0) << r.out << r.err;
  json receipt = this->receipt("l1");
  EXPECT_EQ(receipt["state"], "built");
  bool said = false;
  for (const json& v : receipt["verifications"])
    if (v["target"] == "toolchain") {
      said = true;
      EXPECT_EQ(v["expected"], "the learned closure (" + std::to_string(files) + " host files)");
      EXPECT_EQ(v["result"], "pass");
    }
  EXPECT_TRUE(said) << receipt["verifications"].dump();
  for (const json& v : receipt["view"]) EXPECT_NE(v["kind"], "toolchain") << v.dump();
  for (const json& i : receipt["admission"]["inputs"])
    EXPECT_NE(i["annotations"]["kind"], "toolchain") << i.dump();
}

// The CI recipe: learn once, then freeze each commit with --closure-from (no learning, no root).
// A commit that does not compile is admitted and fails at run with the compiler's message; one
// that compiles builds what the learned admission builds.
TEST_F(ClosureFromTest, ACommitThatDoesNotCompileIsAdmittedAndFailsAtRun) {
  auto c = learn("learned.json", {"/bin/sh", "build.sh"});
  ASSERT_EQ(c.status.code, 0) << c.err;
  auto learned = run(frozen("learned.json", c), "learned");
  ASSERT_EQ(learned.status.code, 0) << learned.err;

  // Frozen as the unprivileged job user: the admission, the sources and the host files it pins
  // are readable by anyone, and the admission is written into a directory of its own.
  fs::permissions(dir_.path(), fs::perms::owner_all | fs::perms::group_exec |
                                   fs::perms::others_exec | fs::perms::group_read |
                                   fs::perms::others_read);
  fs::create_directories(dir_ / "user");
  ASSERT_EQ(::chown((dir_ / "user").c_str(), 1001, 1001), 0);  // the `sealrun` job user
  write_c_source(dir_ / "broken", kBrokenMain);
  write_c_source(dir_ / "good", kGoodMain);
  auto as_user = [&](const std::string& name, const std::string& source) {
    auto args = freeze_base("user/" + name, source);
    args[std::find(args.begin(), args.end(), "--state-dir") - args.begin() + 1] =
        dir_ / "user/no-state";
    args.insert(args.end(),
                {"--json", "--closure-from", dir_ / "learned.json", "--", "/bin/sh", "build.sh"});
    std::vector<std::string> argv = {"/usr/bin/setpriv", "--reuid=sealrun", "--regid=sealrun",
                                     "--clear-groups",
                                     std::string(SEALRUN_BINARY_DIR) + "/sealrun"};
    argv.insert(argv.end(), args.begin(), args.end());
    SpawnOptions o;
    o.argv = argv;
    o.cwd = dir_ / "user";
    auto r = run_capture(o, 120000);
    EXPECT_TRUE(r.ok()) << r.error().message();
    return r.ok() ? *r : Captured{};
  };

  auto broken = as_user("broken.json", dir_ / "broken");
  ASSERT_EQ(broken.status.code, 0) << broken.out << broken.err;
  json printed = json::parse(broken.out);
  EXPECT_EQ(printed.at("changed"), json::array()) << "nothing of the host changed";
  EXPECT_EQ(printed.at("host_files"), read_json(dir_ / "learned.json").at("host_files").size());
  auto r = run({dir_ / "user/broken.json", printed.at("sha256")}, "broken");
  EXPECT_EQ(r.status.code, 5) << r.out << r.err;
  json receipt = this->receipt("broken");
  EXPECT_EQ(receipt["state"], "failed");
  EXPECT_NE(receipt.dump().find("sealrun_no_such_symbol"), std::string::npos)
      << "the compiler's error is in the receipt: " << receipt["commands"].dump();

  auto good = as_user("good.json", dir_ / "good");
  ASSERT_EQ(good.status.code, 0) << good.out << good.err;
  auto g = run({dir_ / "user/good.json", json::parse(good.out).at("sha256")}, "good");
  EXPECT_EQ(g.status.code, 0) << g.out << g.err;
  json built = this->receipt("good");
  EXPECT_EQ(built["state"], "built");
  ASSERT_FALSE(built["outputs"].empty());
  EXPECT_EQ(built["outputs"], this->receipt("learned")["outputs"])
      << "the same source and closure build the same outputs";
}

TEST_F(ClosureFromTest, ClosureFromWithLearnIsAUsageError) {
  auto args = freeze_base("both.json", src_);
  args.insert(args.end(), {"--closure-from", dir_ / "whatever.json", "--learn", "--", "/bin/true"});
  auto c = sealrun(args);
  EXPECT_EQ(c.status.code, 2) << c.err;
  EXPECT_NE(c.err.find("--closure-from"), std::string::npos) << c.err;
  EXPECT_FALSE(fs::exists(dir_ / "both.json"));
}

// A closure file under a learning root that the test can change: a changed file is named, one
// that vanished is refused (nothing written), and a --tree over it wins (the entry is dropped).
class ClosureFromChangeTest : public ClosureFromTest {
 public:
  void SetUp() override {
    ClosureFromTest::SetUp();
    if (IsSkipped()) return;
    char name[] = "/usr/local/share/sealrun-test-XXXXXX";
    fs::create_directories("/usr/local/share");
    ASSERT_NE(::mkdtemp(name), nullptr);
    ::chmod(name, 0755);
    data_dir_ = name;
    data_ = data_dir_ + "/data.txt";
    write_text(data_, "learned bytes\n");
    ::chmod(data_.c_str(), 0644);
  }
  void TearDown() override {
    std::error_code ec;
    if (!data_dir_.empty()) fs::remove_all(data_dir_, ec);
  }
  std::string data_dir_, data_;
};

TEST_F(ClosureFromChangeTest, NamesAChangedFileAndRefusesAVanishedOne) {
  auto c = learn("learned.json", {"/bin/sh", "-c", "cat " + data_ + " > /out/copy"});
  ASSERT_EQ(c.status.code, 0) << c.err;
  std::set<std::string> pinned;
  const json learned = read_json(dir_ / "learned.json");  // named: the loop must not dangle
  for (const json& f : learned.at("host_files")) pinned.insert(f["path"].get<std::string>());
  ASSERT_TRUE(pinned.count(data_)) << "the learned closure pins " << data_;

  // Unchanged: nothing named.
  auto same = closure_from("learned.json", "same.json", src_);
  ASSERT_EQ(same.status.code, 0) << same.err;
  EXPECT_EQ(same.err.find("changed since " + dir_ / "learned.json" + ": "), std::string::npos)
      << same.err;
  EXPECT_NE(same.err.find("0 changed since"), std::string::npos) << same.err;

  write_text(data_, "edited bytes\n");
  auto changed = closure_from("learned.json", "changed.json", src_);
  ASSERT_EQ(changed.status.code, 0) << changed.err;
  EXPECT_NE(changed.err.find("changed since " + dir_ / "learned.json" + ": " + data_),
            std::string::npos)
      << changed.err;
  auto as_json = closure_from("learned.json", "changed2.json", src_, {"--json"});
  ASSERT_EQ(as_json.status.code, 0) << as_json.err;
  EXPECT_EQ(json::parse(as_json.out).at("changed"), json::array({data_}));
  // The new admission pins the bytes as they are now.
  bool repinned = false;
  const json changed_doc = read_json(dir_ / "changed.json");
  for (const json& f : changed_doc.at("host_files")) {
    if (f["path"] != data_) continue;
    repinned = true;
    EXPECT_EQ(f["sha256"], sha256_hex("edited bytes\n"));
  }
  EXPECT_TRUE(repinned);

  // A --tree over the file's directory wins: the entry is dropped and counted.
  auto tree = closure_from("learned.json", "tree.json", src_, {"--json", "--tree", data_dir_});
  ASSERT_EQ(tree.status.code, 0) << tree.err;
  EXPECT_EQ(json::parse(tree.out).at("dropped"), 1);
  EXPECT_EQ(json::parse(tree.out).at("changed"), json::array());
  json tree_doc = read_json(dir_ / "tree.json");
  for (const json& f : tree_doc.at("host_files")) EXPECT_NE(f["path"], data_);
  EXPECT_EQ(tree_doc.at("trees")[0].at("job_path"), data_dir_);

  fs::remove(data_);
  auto vanished = closure_from("learned.json", "vanished.json", src_);
  EXPECT_EQ(vanished.status.code, 1);
  EXPECT_NE(vanished.err.find(data_ + " vanished"), std::string::npos) << vanished.err;
  EXPECT_NE(vanished.err.find("nothing was written"), std::string::npos) << vanished.err;
  EXPECT_FALSE(fs::exists(dir_ / "vanished.json"));
}

// Without a toolchain and without learning there is nothing to run the command with: a clear
// error that says what to give, and nothing written.
TEST(FreezeWithoutToolchain, IsAClearErrorWithAHint) {
  TempDir dir;
  fs::create_directories(dir / "src");
  write_text(dir / "src/build.sh", "true\n");
  SpawnOptions o;
  o.argv = {std::string(SEALRUN_BINARY_DIR) + "/sealrun",
            "admit",
            "freeze",
            "--out",
            dir / "a.json",
            "--source",
            dir / "src",
            "--",
            "/bin/sh",
            "build.sh"};
  auto r = run_capture(o, 60000);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->status.code, 1) << r->err;
  EXPECT_NE(r->err.find("toolchain: missing"), std::string::npos) << r->err;
  EXPECT_NE(r->err.find("--toolchain DIR, or --learn to pin what the command uses"),
            std::string::npos)
      << r->err;
  EXPECT_FALSE(fs::exists(dir / "a.json"));
}

}  // namespace
}  // namespace sealrun::testing
