// SPDX-License-Identifier: Apache-2.0
// Real projects, the way a newcomer brings them: a release tarball as Debian ships it (GNU hello
// 2.10, automake; fmtlib 9.1.0, CMake; Lua 5.4.4, a plain Makefile), learned with `sealrun admit
// freeze --learn` and no --toolchain (the learned closure is the toolchain), then built twice from
// the learned admission, from a copy of /src into /out, with a `useradd` on the host between the
// two runs. Both runs must be `built` and give the same outputs, and what they built must work on
// the host. Run as root through the built binary, with real bwrap and real fanotify;
// `ctest -L realproj`.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>
#include <vector>

#include "core/process.h"
#include "tests/controller/run_test_support.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Each controller call's own bound: a learning run (the learning job, hashing its closure and the
// proving run) or one `run` of a learned admission. The test itself should take well under five
// minutes in all; this only stops a hung call.
constexpr int64_t kCallTimeoutMs = 600000;

// The host's own answer: exit code and combined output of `argv`.
std::pair<int, std::string> host_run(const std::vector<std::string>& argv) {
  SpawnOptions o;
  o.argv = argv;
  auto r = run_capture(o, 120000);
  EXPECT_TRUE(r.ok()) << argv[0];
  if (!r.ok()) return {-1, ""};
  return {r->status.code, r->out + r->err};
}

// A throwaway user added on the host for the life of this object and always removed with its
// home (userdel -r), however the test ends: the host's churn between two runs of one admission.
// useradd retries while another tool holds /etc/passwd's lock.
class ThrowawayUser {
 public:
  ThrowawayUser() : name_(kPrefix + std::to_string(::getpid())) {
    remove_stale();
    for (int attempt = 0; attempt < 20; ++attempt) {
      auto [code, out] = host_run({"/usr/sbin/useradd", "-m", "-s", "/usr/sbin/nologin", name_});
      if (code == 0) {
        added_ = true;
        return;
      }
      last_error_ = out;
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
  }
  ~ThrowawayUser() {
    if (!added_) return;
    auto [code, out] = host_run({"/usr/sbin/userdel", "-r", name_});
    // 12: the home could not be removed; the user itself is gone.
    EXPECT_TRUE(code == 0 || code == 12) << "userdel -r " << name_ << ": " << out;
  }
  ThrowawayUser(const ThrowawayUser&) = delete;
  ThrowawayUser& operator=(const ThrowawayUser&) = delete;
  bool added() const { return added_; }
  const std::string& name() const { return name_; }
  const std::string& last_error() const { return last_error_; }

 private:
  static constexpr const char* kPrefix = "srrp";
  // Users of this kind whose test process is gone (killed at its timeout, before its destructor
  // ran): removed, so a killed run leaves nothing behind for long.
  static void remove_stale() {
    std::ifstream passwd("/etc/passwd");
    std::string line;
    std::vector<std::string> stale;
    while (std::getline(passwd, line)) {
      std::string name = line.substr(0, line.find(':'));
      std::string pid = name.substr(std::min(name.size(), std::string(kPrefix).size()));
      if (name.rfind(kPrefix, 0) != 0 || pid.empty() ||
          pid.find_first_not_of("0123456789") != std::string::npos)
        continue;
      if (!fs::exists("/proc/" + pid)) stale.push_back(name);
    }
    for (const auto& name : stale) host_run({"/usr/sbin/userdel", "-r", name});
  }

  std::string name_;
  bool added_ = false;
  std::string last_error_;
};

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

class RealProjectTest : public RunTest {
 public:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "--learn needs root (fanotify); CI runs as root";
    RunTest::SetUp();
    started_ = std::chrono::steady_clock::now();
  }
  void TearDown() override {
    if (!IsSkipped())
      std::cout << "[ timing  ] whole test " << seconds_since(started_) << " s" << std::endl;
  }

  // tests/fixtures/SCRIPT's tree `name` under build/fixtures (fetched on first use).
  std::string fixture(const std::string& script, const std::string& name) {
    auto fixtures = fixture_made_by(script);
    EXPECT_TRUE(fixtures.ok()) << fixtures.error().message();
    return fixtures.ok() ? *fixtures + "/" + name : "/nonexistent";
  }

  // `admit freeze --learn` of `/bin/sh -c script` over `source`, without --toolchain: the
  // printed JSON ({path, sha256, host_files, ...}), or a failed test.
  json learn(const std::string& source, const std::string& script, const std::string& name) {
    auto t = std::chrono::steady_clock::now();
    auto c = sealrun({"admit", "freeze", "--out", dir_ / name, "--source", source, "--state-dir",
                      state_, "--env", "PATH=/usr/bin:/bin", "--set", "limits.wall_clock_s=600",
                      "--json", "--learn", "--", "/bin/sh", "-c", script},
                     std::nullopt, kCallTimeoutMs);
    std::cout << "[ timing  ] learn (with its proving run) " << seconds_since(t) << " s"
              << std::endl;
    EXPECT_EQ(c.status.code, 0) << c.out << c.err;
    json printed = json::parse(c.out, nullptr, false);
    EXPECT_TRUE(printed.is_object()) << c.out;
    return printed.is_object() ? printed : json::object();
  }

  // One run of the learned admission `name` as `id`: its receipt.
  json run_learned(const std::string& name, const std::string& sha256, const std::string& id) {
    auto t = std::chrono::steady_clock::now();
    auto c = sealrun({"run", dir_ / name, "--sha256", sha256, "--id", id, "--state-dir", state_},
                     std::nullopt, kCallTimeoutMs);
    std::cout << "[ timing  ] run " << id << " " << seconds_since(t) << " s" << std::endl;
    EXPECT_EQ(c.status.code, 0) << c.out << c.err;
    return receipt(id);
  }

  // The learned admission `name` of `source` and `script`, run twice with a throwaway user added
  // on the host between the runs: both receipts, after the checks every project shares.
  std::pair<json, json> learn_and_build_twice(const std::string& source, const std::string& script,
                                              const std::string& name) {
    json printed = learn(source, script, name + ".json");
    if (::testing::Test::HasFailure()) return {};  // nothing learned: nothing to run
    std::ifstream in(dir_ / (name + ".json"));
    json doc = json::parse(in, nullptr, false);
    if (!doc.is_object()) {
      ADD_FAILURE() << "the learned admission " << name << ".json is not a JSON object";
      return {};
    }
    EXPECT_GT(printed.value("host_files", 0), 0) << printed.dump();
    expect_host_churn_not_learned(doc);
    // The release tarball builds from /src as shipped: every entry has one recorded mtime.
    json pinned_source = doc.value("source", json::object());
    EXPECT_EQ(pinned_source.value("mtimes", ""), "fixed") << "the admission's source.mtimes";

    std::string sha = printed.value("sha256", "");
    json r1 = run_learned(name + ".json", sha, name + "-1");
    json r2;
    {
      ThrowawayUser user;
      EXPECT_TRUE(user.added()) << "useradd " << user.name() << ": " << user.last_error();
      r2 = run_learned(name + ".json", sha, name + "-2");
    }  // the user is removed here, whatever the runs did
    if (!r1.is_object() || !r2.is_object()) {
      ADD_FAILURE() << "a run left no receipt";
      return {};
    }
    EXPECT_EQ(r1.value("state", ""), "built") << job_stderr(r1);
    EXPECT_EQ(r2.value("state", ""), "built") << job_stderr(r2);
    EXPECT_FALSE(r1.value("outputs", json::array()).empty());
    EXPECT_EQ(r1["outputs"], r2["outputs"]) << "two runs of one learned admission differ";
    EXPECT_EQ(r1["outputs_list_sha256"], r2["outputs_list_sha256"]);
    // A looked-up /usr is in the view as an empty directory (kind dir) that the closure's files
    // fill; the host's tree is never bound there whole.
    for (const json& v : r1.value("view", json::array())) {
      if (v.value("job_path", "") == "/usr") {
        EXPECT_EQ(v.value("kind", ""), "dir") << "the host's /usr is not in a learned view whole";
      }
    }
    expect_generated_etc(r1);
    return {r1, r2};
  }

  // The host's user and name-service files are not pinned from the host: a useradd there must not
  // touch the job's view.
  static void expect_host_churn_not_learned(const json& doc) {
    std::set<std::string> files;
    for (const json& f : doc.value("host_files", json::array())) files.insert(f.value("path", ""));
    for (const char* own : {"/etc/passwd", "/etc/group", "/etc/hosts", "/etc/hostname",
                            "/etc/nsswitch.conf", "/etc/resolv.conf", "/etc/shadow"})
      EXPECT_EQ(files.count(own), 0u) << own << " was learned from the host";
  }

  // The job's /etc/passwd and /etc/group are made by sealrun for the job (view[] kind generated).
  static void expect_generated_etc(const json& receipt) {
    std::set<std::string> generated;
    for (const json& v : receipt.value("view", json::array()))
      if (v.value("kind", "") == "generated") generated.insert(v.value("job_path", ""));
    for (const char* path : {"/etc/passwd", "/etc/group"})
      EXPECT_EQ(generated.count(path), 1u) << path << " is not generated for the job";
  }

  // The end of the job's stderr in `receipt` (what a failed build said), else its reasons.
  static std::string job_stderr(const json& receipt) {
    for (const json& c : receipt.value("commands", json::array()))
      if (c.value("label", "") == "job")
        return "the job's stderr ended with:\n" +
               c.value("stderr", json::object()).value("tail", std::string());
    return receipt.dump().substr(0, 2000);
  }

  // Where the host holds run `id`'s output `path` (relative to /out).
  std::string output_path(const std::string& id, const std::string& path) const {
    return state_ + "/results/" + id + "/out/" + path;
  }

  static std::set<std::string> output_names(const json& receipt) {
    std::set<std::string> names;
    for (const json& o : receipt.value("outputs", json::array())) names.insert(o.value("path", ""));
    return names;
  }

  std::chrono::steady_clock::time_point started_;
};

// GNU hello 2.10 from its release tarball: `./configure && make` from a copy of /src, which must
// not try to regenerate configure, aclocal.m4 or Makefile.in (no automake in the closure).
TEST_F(RealProjectTest, GnuHelloLearnedWithoutAToolchainBuildsTwiceTheSame) {
  std::string src = fixture("hello_source.sh", "hello-src");
  ASSERT_FALSE(::testing::Test::HasFailure());
  const std::string script =
      "cp -a /src /scratch/s && cd /scratch/s && ./configure --prefix=/usr --disable-nls && "
      "make -j2 && make install DESTDIR=/out/root";
  auto [r1, r2] = learn_and_build_twice(src, script, "hello");
  ASSERT_FALSE(::testing::Test::HasFailure());
  auto names = output_names(r1);
  EXPECT_EQ(names.count("root/usr/bin/hello"), 1u) << r1["outputs"].dump();
  EXPECT_EQ(names.count("root/usr/share/man/man1/hello.1"), 1u) << r1["outputs"].dump();
  // What was built runs on the host, from either run.
  for (const char* id : {"hello-1", "hello-2"}) {
    auto [code, out] = host_run({output_path(id, "root/usr/bin/hello")});
    EXPECT_EQ(code, 0) << out;
    EXPECT_EQ(out, "Hello, world!\n") << id;
  }
}

// fmtlib 9.1.0 with CMake: configure, build and install the library (tests off: Debian's tarball
// leaves out the bundled GoogleTest). CMake looks up its modules with stat() before it reads
// them; a run that lacks one fails with "Could not find CMAKE_ROOT".
TEST_F(RealProjectTest, FmtLearnedWithoutAToolchainBuildsTwiceTheSame) {
  if (::access("/usr/bin/cmake", X_OK) != 0) GTEST_SKIP() << "cmake is not installed";
  std::string src = fixture("fmt_source.sh", "fmt-src");
  ASSERT_FALSE(::testing::Test::HasFailure());
  const std::string script =
      "cmake -S /src -B /scratch/b -DFMT_TEST=OFF -DFMT_DOC=OFF -DCMAKE_BUILD_TYPE=Release && "
      "cmake --build /scratch/b -j2 && DESTDIR=/out/root cmake --install /scratch/b";
  auto [r1, r2] = learn_and_build_twice(src, script, "fmt");
  ASSERT_FALSE(::testing::Test::HasFailure());
  auto names = output_names(r1);
  const std::string lib = "root/usr/local/lib/libfmt.a";
  const std::string include = "root/usr/local/include";
  EXPECT_EQ(names.count(lib), 1u) << r1["outputs"].dump();
  EXPECT_EQ(names.count(include + "/fmt/format.h"), 1u) << r1["outputs"].dump();
  // The library and headers built in the job work: a program compiled against them on the host.
  write_text(dir_ / "use_fmt.cc",
             "#include <fmt/format.h>\n"
             "int main() { fmt::print(\"{}-{}\\n\", \"fmt\", 9); }\n");
  auto [cc, cc_out] =
      host_run({"/usr/bin/g++", "-std=c++17", "-I" + output_path("fmt-2", include),
                dir_ / "use_fmt.cc", output_path("fmt-2", lib), "-o", dir_ / "use_fmt"});
  ASSERT_EQ(cc, 0) << cc_out;
  auto [code, out] = host_run({dir_ / "use_fmt"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out, "fmt-9\n");
}

// Lua 5.4.4, whose build system is a plain Makefile (`make linux`, recursive): built and
// installed, and the interpreter built in the job runs on the host.
TEST_F(RealProjectTest, LuaWithAPlainMakefileLearnedWithoutAToolchainBuildsTwiceTheSame) {
  std::string src = fixture("lua_source.sh", "lua-src");
  ASSERT_FALSE(::testing::Test::HasFailure());
  const std::string script =
      "cp -a /src /scratch/l && cd /scratch/l && make -j2 linux && "
      "make install INSTALL_TOP=/out/root/usr";
  auto [r1, r2] = learn_and_build_twice(src, script, "lua");
  ASSERT_FALSE(::testing::Test::HasFailure());
  auto names = output_names(r1);
  for (const char* built : {"root/usr/bin/lua", "root/usr/bin/luac", "root/usr/lib/liblua.a"})
    EXPECT_EQ(names.count(built), 1u) << built << " in " << r1["outputs"].dump();
  auto [code, out] = host_run({output_path("lua-2", "root/usr/bin/lua"), "-e",
                               "print(string.format('%d-%s', 6 * 7, _VERSION))"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out, "42-Lua 5.4\n");
}

}  // namespace
}  // namespace sealrun::testing
