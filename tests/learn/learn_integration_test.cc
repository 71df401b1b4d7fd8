// SPDX-License-Identifier: Apache-2.0
// `sealrun admit freeze --learn` end to end, through the built binary, as root: real bwrap as the
// job user, real fanotify marks on the sandbox's mounts, a real resource group. What is learned is
// compared with what the host itself says (readlink, gcc -print-*, realpath), never with the
// learning code's own helpers.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <deque>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "core/process.h"
#include "fingerprint/file_hash.h"
#include "fingerprint/sha256.h"
#include "tests/learn/learn_run_test.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class LearnTest : public LearnRunTest {
 public:
  // Runs the admission `learned` wrote to `name` twice (ids ID-1 and ID-2): both receipts.
  std::pair<json, json> run_twice(const Captured& learned, const std::string& name,
                                  const std::string& id) {
    Frozen a{dir_ / name, json::parse(learned.out).at("sha256")};
    for (const char* n : {"-1", "-2"}) {
      auto r = run(a, id + n);
      EXPECT_EQ(r.status.code, 0) << r.out << r.err;
    }
    return {receipt(id + "-1"), receipt(id + "-2")};
  }

  static std::map<std::string, std::string> files_of(const json& doc) {
    std::map<std::string, std::string> out;
    for (const json& f : doc.at("host_files")) out[f.at("path")] = f.at("sha256");
    return out;
  }
  static std::map<std::string, std::string> links_of(const json& doc) {
    std::map<std::string, std::string> out;
    for (const json& l : doc.at("host_links")) out[l.at("path")] = l.at("target");
    return out;
  }
  static std::set<std::string> dirs_of(const json& doc) {
    return doc.value("host_dirs", json::array()).get<std::set<std::string>>();  // absent: none
  }

  // The host's own answer to `cmd` (first line).
  static std::string host_says(const std::vector<std::string>& argv) {
    SpawnOptions o;
    o.argv = argv;
    auto r = run_capture(o, 30000);
    EXPECT_TRUE(r.ok() && r->status.success()) << argv[0];
    std::string out = r.ok() ? r->out : "";
    return out.substr(0, out.find('\n'));
  }
};

// Resolves `path` one component at a time with the host's own readlink, expecting every link met
// (a directory link such as /bin -> usr/bin included) in `links`; the end must be a pinned file
// with the host's own hash.
void expect_chain_pinned(const std::string& path, const std::map<std::string, std::string>& links,
                         const std::map<std::string, std::string>& files) {
  std::deque<std::string> todo;
  for (const auto& part : fs::path(path)) todo.push_back(part.string());
  fs::path at = "/";
  for (int hops = 0; !todo.empty() && hops < 1000; ++hops) {
    std::string part = todo.front();
    todo.pop_front();
    if (part == "/" || part == "." || part.empty()) continue;
    if (part == "..") {
      at = at.parent_path();
      continue;
    }
    fs::path next = at / part;
    if (!fs::is_symlink(next)) {
      at = next;
      continue;
    }
    std::string target = fs::read_symlink(next).string();
    auto it = links.find(next.string());
    EXPECT_NE(it, links.end()) << "link " << next << " (on the way to " << path << ") not recorded";
    if (it != links.end()) {
      EXPECT_EQ(it->second, target) << next;
    }
    std::deque<std::string> more;
    for (const auto& p : fs::path(target)) more.push_back(p.string());
    todo.insert(todo.begin(), more.begin(), more.end());
    if (target[0] == '/') at = "/";
  }
  ASSERT_EQ(at.string(), fs::canonical(path).string());
  auto f = files.find(at.string());
  ASSERT_NE(f, files.end()) << at << " (the end of " << path << ") not pinned";
  auto digest = hash_file(at.string());
  ASSERT_TRUE(digest.ok());
  EXPECT_EQ(f->second, digest->sha256) << at;
}

void expect_nothing_of_the_job_itself(const json& doc, const std::string& temp_root) {
  for (const auto& [path, sha] : LearnTest::files_of(doc)) {
    for (const char* own : {"/src", "/out", "/scratch", "/tmp", "/opt/toolchain", "/proc", "/dev"})
      EXPECT_FALSE(path == own || path.rfind(std::string(own) + "/", 0) == 0) << path;
    EXPECT_EQ(path.rfind(temp_root, 0), std::string::npos) << path;
  }
}

TEST_F(LearnTest, RecordsOsReleaseWithItsLinksAndAListedDirectory) {
  auto c = learn("cat /etc/os-release; ls /usr/include > /dev/null", "learned.json");
  ASSERT_EQ(c.status.code, 0) << c.err;
  json printed = json::parse(c.out);
  json doc = read_json(dir_ / "learned.json");
  EXPECT_EQ(printed.at("host_files"), doc.at("host_files").size());
  auto files = files_of(doc);
  auto links = links_of(doc);
  expect_chain_pinned("/etc/os-release", links, files);
  expect_chain_pinned("/bin/sh", links, files);  // the command itself, through /bin if a link
  expect_chain_pinned("/usr/bin/cat", links, files);
  EXPECT_TRUE(dirs_of(doc).count("/usr/include")) << doc.at("host_dirs").dump();
  // Listing is not reading: nothing below /usr/include was opened.
  for (const auto& [path, sha] : files) EXPECT_NE(path.rfind("/usr/include/", 0), 0u) << path;
  expect_nothing_of_the_job_itself(doc, dir_.str());
  // Sorted, regular files only.
  std::vector<std::string> order;
  for (const json& f : doc.at("host_files")) order.push_back(f.at("path"));
  EXPECT_TRUE(std::is_sorted(order.begin(), order.end()));
  for (const auto& path : order) EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(path))) << path;
  // The rest of the admission is the ordinary freeze.
  EXPECT_EQ(doc.at("command").at("argv")[0], "/bin/sh");
  EXPECT_EQ(doc.at("toolchain").at("mount_path"), "/opt/toolchain");
}

TEST_F(LearnTest, OpensByOtherProcessesOnTheHostAreNotRecorded) {
  // While the job sleeps, this process keeps opening a host file the job never touches (marks on
  // the host's own mounts would record it).
  const std::string other = "/usr/bin/env";
  std::atomic<bool> stop{false};
  std::atomic<int> opened{0};
  std::thread opener([&] {
    while (!stop.load()) {
      std::ifstream in(other);
      if (in.good()) opened.fetch_add(1);
      std::this_thread::yield();
    }
  });
  auto c = learn("sleep 1; cat /etc/hostname >/dev/null 2>&1; true", "quiet.json");
  stop.store(true);
  opener.join();
  ASSERT_EQ(c.status.code, 0) << c.err;
  ASSERT_GT(opened.load(), 0);
  auto files = files_of(read_json(dir_ / "quiet.json"));
  EXPECT_EQ(files.count(other), 0u);
  EXPECT_EQ(files.count("/usr/bin/sleep"), 1u);
}

// A real multi-file C build: the driver, cc1, as, ld, the crt objects and the headers it used.
class LearnCBuildTest : public LearnTest {
 public:
  void SetUp() override {
    LearnTest::SetUp();
    if (IsSkipped()) return;
    if (::access("/usr/bin/gcc", X_OK) != 0) GTEST_SKIP() << "gcc is not installed";
    write_text(src_ + "/util.h", "#pragma once\nint twice(int);\n");
    write_text(src_ + "/util.c",
               "#include <string.h>\n#include \"util.h\"\n"
               "int twice(int x) { return x * 2 + (int)strlen(\"\"); }\n");
    write_text(src_ + "/main.c",
               "#include <stdio.h>\n#include \"util.h\"\n"
               "int main(void) { printf(\"%d\\n\", twice(21)); return 0; }\n");
  }
  static constexpr const char* kBuild =
      "gcc -O1 -c util.c -o /scratch/util.o && gcc -O1 -c main.c -o /scratch/main.o && "
      "gcc /scratch/util.o /scratch/main.o -o /out/prog && /out/prog";
};

TEST_F(LearnCBuildTest, RecordsTheToolchainItUsed) {
  auto c = learn(kBuild, "c.json");
  ASSERT_EQ(c.status.code, 0) << c.err;
  json doc = read_json(dir_ / "c.json");
  auto files = files_of(doc);
  auto links = links_of(doc);
  expect_chain_pinned("/usr/bin/gcc", links, files);  // the driver, through gcc -> gcc-12 -> ...
  for (const char* prog : {"cc1", "collect2"})
    expect_chain_pinned(host_says({"/usr/bin/gcc", std::string("-print-prog-name=") + prog}), links,
                        files);
  for (const char* tool : {"/usr/bin/as", "/usr/bin/ld"}) expect_chain_pinned(tool, links, files);
  auto file_name = [&](const char* name) {
    return host_says({"/usr/bin/gcc", std::string("-print-file-name=") + name});
  };
  for (const char* obj : {"crti.o", "crtn.o", "libc.so", "libgcc.a"})
    expect_chain_pinned(file_name(obj), links, files);
  // The start files depend on whether gcc makes position-independent executables by default.
  bool pie = host_says({"/bin/sh", "-c",
                        "/usr/bin/gcc -v 2>&1 | grep -c enable-default-pie || "
                        "true"}) != "0";
  for (const char* obj : pie ? std::vector<const char*>{"Scrt1.o", "crtbeginS.o", "crtendS.o"}
                             : std::vector<const char*>{"crt1.o", "crtbegin.o", "crtend.o"})
    expect_chain_pinned(file_name(obj), links, files);
  for (const char* header : {"/usr/include/stdio.h", "/usr/include/string.h"})
    expect_chain_pinned(header, links, files);
  EXPECT_EQ(files.count("/usr/include/unistd.h"), 0u) << "a header nobody included";
  expect_nothing_of_the_job_itself(doc, dir_.str());
}

TEST_F(LearnCBuildTest, TwoLearnsOfTheSameCommandPinTheSameClosure) {
  auto a = learn(kBuild, "a.json");
  ASSERT_EQ(a.status.code, 0) << a.err;
  auto b = learn(kBuild, "b.json");
  ASSERT_EQ(b.status.code, 0) << b.err;
  json da = read_json(dir_ / "a.json"), db = read_json(dir_ / "b.json");
  EXPECT_EQ(da.at("host_files"), db.at("host_files"));
  EXPECT_EQ(da.at("host_links"), db.at("host_links"));
  EXPECT_EQ(da.value("host_dirs", json::array()),
            db.value("host_dirs", json::array()));  // absent: none
  EXPECT_EQ(json::parse(a.out).at("sha256"), json::parse(b.out).at("sha256"));
}

TEST_F(LearnTest, TooManyFilesIsAClearErrorAndWritesNothing) {
  auto c = learn("cat /etc/os-release", "capped.json", {"--learn-max-files", "3"});
  EXPECT_EQ(c.status.code, 1);
  EXPECT_NE(c.err.find("over the limit of 3 (--learn-max-files)"), std::string::npos) << c.err;
  EXPECT_FALSE(fs::exists(dir_ / "capped.json"));
}

TEST_F(LearnTest, LearnWithoutACommandIsAClearError) {
  auto c = sealrun({"admit", "freeze", "--out", dir_ / "none.json", "--source", src_, "--toolchain",
                    toolchain_, "--learn"});
  EXPECT_EQ(c.status.code, 1);
  EXPECT_NE(c.err.find("give the command to learn after --"), std::string::npos) << c.err;
  EXPECT_FALSE(fs::exists(dir_ / "none.json"));
}

TEST_F(LearnTest, ACommandThatFailsWhileLearningWritesNoAdmission) {
  auto c = learn("echo learning-went-wrong >&2; exit 7", "failed.json");
  EXPECT_EQ(c.status.code, 1);
  EXPECT_NE(c.err.find("failed while learning"), std::string::npos) << c.err;
  EXPECT_NE(c.err.find("learning-went-wrong"), std::string::npos) << c.err;
  EXPECT_FALSE(fs::exists(dir_ / "failed.json"));
}

TEST_F(LearnTest, TheLearningRunStopsAtTheAdmissionsWallClock) {
  auto c = learn("exec sleep 60", "slow.json", {"--set", "limits.wall_clock_s=1"});
  EXPECT_EQ(c.status.code, 1);
  EXPECT_NE(c.err.find("wall-clock limit of 1 s"), std::string::npos) << c.err;
  EXPECT_FALSE(fs::exists(dir_ / "slow.json"));
}

TEST_F(LearnTest, TheLearningRunHasNoNetworkAndWritesNothingOnTheHost) {
  // Host trees are read-only and there is no network besides loopback; the command fails when
  // either is not so, and a failed command writes no admission.
  auto c = learn(
      "! touch /etc/sealrun-learn-probe 2>/dev/null && "
      "! touch /usr/sealrun-learn-probe 2>/dev/null && "
      "test \"$(ls /sys/class/net 2>/dev/null | grep -v '^lo$')\" = ''",
      "contained.json");
  EXPECT_EQ(c.status.code, 0) << c.err;
  EXPECT_FALSE(fs::exists("/etc/sealrun-learn-probe"));
}

}  // namespace
}  // namespace sealrun::testing

namespace sealrun::testing {
namespace {

// A learned admission is run like any other: the job sees the closure and nothing else of the
// host, builds, and a second run from the same admission gives the same outputs.
TEST_F(LearnCBuildTest, ALearnedAdmissionBuildsTwiceWithTheSameOutputs) {
  auto c = learn(kBuild, "run.json");
  ASSERT_EQ(c.status.code, 0) << c.err;
  auto [r1, r2] = run_twice(c, "run.json", "l");
  EXPECT_EQ(r1["state"], "built");
  EXPECT_EQ(r1["outputs"], r2["outputs"]);
  ASSERT_FALSE(r1["outputs"].empty());
  size_t closure = 0;
  for (const json& v : r1["view"]) {
    if (v["kind"] == "closure") ++closure;
    // A `dir` entry is an empty directory the job looked up, not the host's tree.
    if (v["kind"] != "dir") {
      EXPECT_NE(v["job_path"], "/usr") << "the host's /usr is not in a learned view whole";
    }
  }
  EXPECT_EQ(closure, read_json(dir_ / "run.json").at("host_files").size());
}

// A closure that misses a file the build needs (cc1 taken out of host_files): the job fails,
// visibly, instead of finding the file on the host.
TEST_F(LearnCBuildTest, AClosureThatMissesAFileFailsTheJobVisibly) {
  auto c = learn(kBuild, "full.json");
  ASSERT_EQ(c.status.code, 0) << c.err;
  json doc = read_json(dir_ / "full.json");
  std::string cc1 = fs::canonical(host_says({"/usr/bin/gcc", "-print-prog-name=cc1"})).string();
  json kept = json::array();
  for (const json& f : doc.at("host_files"))
    if (f.at("path") != cc1) kept.push_back(f);
  ASSERT_EQ(kept.size() + 1, doc.at("host_files").size()) << cc1 << " was not learned";
  doc["host_files"] = kept;
  std::string bytes = doc.dump(2) + "\n";
  write_text(dir_ / "missing.json", bytes);
  auto r = run({dir_ / "missing.json", sha256_hex(bytes)}, "miss");
  EXPECT_EQ(r.status.code, 5) << r.out << r.err;
  EXPECT_EQ(receipt("miss")["state"], "failed");
  EXPECT_NE(r.err.find("cc1"), std::string::npos) << "gcc names what it could not run:\n" << r.err;
}

// The zlib-sized case (issue 16): zlib 1.2.13's own `configure` and `make`, learned once, then run
// twice from the learned admission with nothing of the host but the closure: both runs are built
// and give the same library and test program, and the closure has the tools configure used.
class LearnZlibTest : public LearnTest {
 public:
  void SetUp() override {
    LearnTest::SetUp();
    if (IsSkipped()) return;
    for (const char* tool : {"/usr/bin/gcc", "/usr/bin/make"})
      if (::access(tool, X_OK) != 0) GTEST_SKIP() << tool << " is not installed";
    auto fixtures = fixture_made_by("zlib_source.sh");
    ASSERT_TRUE(fixtures.ok()) << fixtures.error().message();
    fs::copy(*fixtures + "/zlib-src", src_, fs::copy_options::recursive);
  }
  // Out of the read-only /src: a copy in /scratch is configured and built there.
  static constexpr const char* kConfigureMake =
      "cp -R /src /scratch/z && cd /scratch/z && ./configure --static && "
      "make -j2 libz.a example && ./example && cp libz.a example /out/";
};

TEST_F(LearnZlibTest, ALearnedConfigureAndMakeBuildsTwiceWithTheSameOutputs) {
  auto c = learn(kConfigureMake, "zlib.json", {"--set", "limits.wall_clock_s=600"});
  ASSERT_EQ(c.status.code, 0) << c.err;
  json doc = read_json(dir_ / "zlib.json");
  auto files = files_of(doc);
  auto links = links_of(doc);
  for (const char* tool : {"/usr/bin/make", "/usr/bin/ar", "/usr/bin/gcc", "/usr/bin/sed"})
    expect_chain_pinned(tool, links, files);
  expect_nothing_of_the_job_itself(doc, dir_.str());

  auto [r1, r2] = run_twice(c, "zlib.json", "z");
  EXPECT_EQ(r1["state"], "built");
  EXPECT_EQ(r2["state"], "built");
  std::set<std::string> names;
  for (const json& o : r1["outputs"]) names.insert(o["path"]);
  EXPECT_EQ(names, (std::set<std::string>{"example", "libz.a"}));
  EXPECT_EQ(r1["outputs"], r2["outputs"]) << "two runs of one learned admission differ";
  for (const json& v : r1["view"])
    if (v["kind"] != "dir") {  // an empty directory the job looked up, not the host's tree
      EXPECT_NE(v["job_path"], "/usr") << "the host's /usr is not in a learned view whole";
    }
}

}  // namespace
}  // namespace sealrun::testing
