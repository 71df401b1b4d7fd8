// SPDX-License-Identifier: Apache-2.0
// Integration test of `sealrun admit freeze` and `sealrun admit check` over real inputs: a git
// repository made here, a real compiler tree (this host's GCC include directory), the busybox OCI
// image fixture and a real host tool (bwrap). The frozen admission must check clean; then one byte
// of each input is altered in turn (on copies, never the host's own files) and exactly the check
// for that input must fail, with exit 3.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "core/process.h"
#include "tests/support/temp_dir.h"

namespace sealrun {
namespace {

using nlohmann::json;
using testing::read_text;
using testing::TempDir;
using testing::write_text;

const std::string kSealrun = SEALRUN_BINARY_DIR "/sealrun";

struct Ran {
  int code = -1;
  std::string out;
  std::string err;
};

Ran run(std::vector<std::string> argv, const std::string& cwd = "") {
  SpawnOptions o;
  o.argv = std::move(argv);
  o.cwd = cwd;
  auto r = run_capture(o, 120000, 16 << 20);
  if (!r.ok()) return Ran{-1, "", r.error().message()};
  return Ran{r->status.code, r->out, r->err};
}

void sh(const std::string& script, const std::string& cwd) {
  Ran r = run({"/bin/sh", "-ec", script}, cwd);
  ASSERT_EQ(r.code, 0) << script << "\n" << r.err << r.out;
}

void flip_byte(const std::string& path, long offset_from_end) {
  std::string s = read_text(path);
  size_t at = s.size() - static_cast<size_t>(offset_from_end);
  s[at] = static_cast<char>(s[at] ^ 0x20);
  write_text(path, s);
}

std::string image_fixture() {
  std::string dir = SEALRUN_BINARY_DIR "/fixtures";
  std::string tar = dir + "/busybox.oci.tar";
  if (!std::filesystem::exists(tar)) {
    Ran r = run({"/bin/bash", SEALRUN_SOURCE_DIR "/tests/fixtures/busybox_image.sh", dir});
    EXPECT_EQ(r.code, 0) << r.err;
  }
  return tar;
}

// This host's compiler tree, kept modest: GCC's own include directory (a few MB of real headers).
std::string compiler_tree() {
  Ran r = run({"/bin/sh", "-c", "gcc -print-file-name=include"});
  std::string dir = r.out.substr(0, r.out.find('\n'));
  EXPECT_TRUE(std::filesystem::is_directory(dir)) << dir;
  return dir;
}

class AdmitIntegration : public ::testing::Test {
 protected:
  void SetUp() override {
    repo_ = dir_ / "repo";
    sh("mkdir -p repo/lib && printf 'int main(void) { return util(); }\\n' > repo/main.c && "
       "printf 'int util(void) { return 0; }\\n' > repo/lib/util.c && cd repo && git init -q && "
       "git add -A && git -c user.name=t -c user.email=t@example.invalid commit -qm one",
       dir_.str());
  }

  std::string freeze(const std::vector<std::string>& extra, const std::string& out) {
    std::vector<std::string> argv = {kSealrun, "admit", "freeze", "--out", out, "--json"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.insert(argv.end(), {"--", "/usr/bin/gcc", "-O2", "main.c"});
    Ran r = run(argv);
    EXPECT_EQ(r.code, 0) << r.err;
    if (r.code != 0) return "";
    json j = json::parse(r.out);
    EXPECT_EQ(j["path"], out);
    return j["sha256"].get<std::string>();
  }

  // Runs `admit check --json`; returns the exit code and the set of failed targets.
  std::pair<int, std::set<std::string>> check(const std::string& path, const std::string& sha) {
    Ran r = run({kSealrun, "admit", "check", path, "--sha256", sha, "--json"});
    std::set<std::string> failed;
    json j = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out << r.err;
    if (j.is_discarded()) return {r.code, failed};
    for (const json& c : j["checks"])
      if (c["result"] == "fail") failed.insert(c["target"].get<std::string>());
    EXPECT_EQ(j["passed"], r.code == 0);
    return {r.code, failed};
  }

  TempDir dir_;
  std::string repo_;
};

TEST_F(AdmitIntegration, RealInputsCheckCleanAndEachAlteredInputFailsExactlyItsCheck) {
  const std::string image = image_fixture();
  const std::string toolchain = compiler_tree();

  // The host's own files, untouched: the admission checks clean and freezing is reproducible.
  std::string host_sha = freeze({"--source", repo_, "--toolchain", toolchain, "--image", image,
                                 "--host-tool", "/usr/bin/bwrap", "--env", "LANG=C.UTF-8"},
                                dir_ / "host.json");
  ASSERT_FALSE(host_sha.empty());
  auto [code, failed] = check(dir_ / "host.json", host_sha);
  EXPECT_EQ(code, 0);
  EXPECT_TRUE(failed.empty());
  std::string again = freeze({"--source", repo_, "--toolchain", toolchain, "--image", image,
                              "--host-tool", "/usr/bin/bwrap", "--env", "LANG=C.UTF-8"},
                             dir_ / "host-again.json");
  EXPECT_EQ(again, host_sha);

  // Copies that may be damaged.
  sh("cp -a '" + toolchain + "' tc && cp '" + image + "' image.tar && cp /usr/bin/bwrap bwrap",
     dir_.str());
  const std::string adm = dir_ / "copies.json";
  std::string sha =
      freeze({"--source", repo_, "--toolchain", dir_ / "tc", "--toolchain-mount", "/opt/toolchain",
              "--image", dir_ / "image.tar", "--host-tool", dir_ / "bwrap"},
             adm);
  ASSERT_FALSE(sha.empty());
  std::tie(code, failed) = check(adm, sha);
  ASSERT_EQ(code, 0);
  ASSERT_TRUE(failed.empty());

  // Toolchain: one byte of one header.
  std::string header = dir_ / "tc/stddef.h";
  ASSERT_TRUE(std::filesystem::exists(header));
  flip_byte(header, 10);
  std::tie(code, failed) = check(adm, sha);
  EXPECT_EQ(code, 3);
  EXPECT_EQ(failed, std::set<std::string>{"toolchain.tree_sha256"});
  flip_byte(header, 10);

  // Image archive: its last byte (record padding, so the archive still reads: only its own
  // digest can notice).
  flip_byte(dir_ / "image.tar", 1);
  std::tie(code, failed) = check(adm, sha);
  EXPECT_EQ(code, 3);
  EXPECT_EQ(failed, std::set<std::string>{"image.archive_sha256"});
  flip_byte(dir_ / "image.tar", 1);

  // Host tool: one byte in the middle of the binary.
  std::string tool = dir_ / "bwrap";
  flip_byte(tool, static_cast<long>(std::filesystem::file_size(tool) / 2));
  std::tie(code, failed) = check(adm, sha);
  EXPECT_EQ(code, 3);
  EXPECT_EQ(failed, std::set<std::string>{"host_tools:" + tool});
  flip_byte(tool, static_cast<long>(std::filesystem::file_size(tool) / 2));

  // Source: the checked-out commit replaced by one with one byte changed in one file.
  sh("git rev-parse HEAD > ../orig && sed -i 's/return 0/return 1/' lib/util.c && "
     "git -c user.name=t -c user.email=t@example.invalid commit -qam two",
     repo_);
  std::tie(code, failed) = check(adm, sha);
  EXPECT_EQ(code, 3);
  EXPECT_EQ(failed, std::set<std::string>{"source.commit"});
  sh("git reset -q --hard $(cat ../orig)", repo_);

  // The admission itself: one byte, checked against the digest given for the original.
  flip_byte(adm, 3);
  std::tie(code, failed) = check(adm, sha);
  EXPECT_EQ(code, 3);
  EXPECT_EQ(failed, std::set<std::string>{"admission"});
  flip_byte(adm, 3);

  // Everything restored: clean again.
  std::tie(code, failed) = check(adm, sha);
  EXPECT_EQ(code, 0);
  EXPECT_TRUE(failed.empty());
}

TEST_F(AdmitIntegration, BundleSourceIsPinnedByItsBytes) {
  sh("git bundle create -q ../src.bundle HEAD main 2>/dev/null || "
     "git bundle create -q ../src.bundle HEAD master",
     repo_);
  const std::string adm = dir_ / "bundle.json";
  std::string sha = freeze({"--source", dir_ / "src.bundle", "--toolchain", dir_ / "repo/lib",
                            "--toolchain-mount", "/opt/tc"},
                           adm);
  ASSERT_FALSE(sha.empty());
  json doc = json::parse(read_text(adm));
  EXPECT_EQ(doc["source"]["kind"], "bundle");
  EXPECT_EQ(doc["source"]["manifest"].size(), 2u);
  auto [code, failed] = check(adm, sha);
  EXPECT_EQ(code, 0);
  EXPECT_TRUE(failed.empty());
  // A damaged bundle: its digest fails (and git, reading it, may fail the rest too).
  flip_byte(dir_ / "src.bundle", 5);
  std::tie(code, failed) = check(adm, sha);
  EXPECT_EQ(code, 3);
  EXPECT_TRUE(failed.count("source.path_sha256"));
}

TEST_F(AdmitIntegration, UsageAndRefusalsFromTheCommandLine) {
  Ran help = run({kSealrun, "admit", "check", "--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("--sha256"), std::string::npos);
  help = run({kSealrun, "admit", "freeze", "--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("--host-tool"), std::string::npos);

  Ran bad = run({kSealrun, "admit", "check", dir_ / "x.json", "--sha256", "nothex"});
  EXPECT_EQ(bad.code, 2);
  // A depth bomb: exit 3 with the reason, quickly.
  write_text(dir_ / "bomb.json", std::string(100000, '['));
  Ran bomb =
      run({kSealrun, "admit", "check", dir_ / "bomb.json", "--sha256", std::string(64, '0')});
  EXPECT_EQ(bomb.code, 3);
  EXPECT_NE(bomb.err.find("nested deeper than 32 levels"), std::string::npos) << bomb.err;
  // A FIFO is refused without blocking.
  ASSERT_EQ(::mkfifo((dir_ / "fifo.json").c_str(), 0600), 0);
  Ran fifo =
      run({kSealrun, "admit", "check", dir_ / "fifo.json", "--sha256", std::string(64, '0')});
  EXPECT_EQ(fifo.code, 3);
  EXPECT_NE(fifo.err.find("FIFO"), std::string::npos) << fifo.err;
}

}  // namespace
}  // namespace sealrun
