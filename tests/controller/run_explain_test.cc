// SPDX-License-Identifier: Apache-2.0
// `sealrun rebuild --explain` end to end (issue 26 points 3 and 4), with the real binary and real
// bwrap: the search names the variations that alone make a difference, and diffoscope runs in a
// sandbox of its own — the real one reports the difference from there, and a hostile stand-in
// (SEALRUN_TEST_DIFFOSCOPE) finds it can neither write the originals (nor see them), nor reach the
// host's network, and runs as the job user in a resource group; a hostile output name reaches it
// as one argument, and a planted symlink is not followed.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/unique_fd.h"
#include "tests/controller/run_test_support.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class ExplainTest : public RunTest {
 protected:
  Frozen built(const std::string& script) {
    Frozen a = freeze(script);
    auto c = run(a, "orig", {"--mechanism", "bwrap"});
    EXPECT_EQ(c.status.code, 0) << c.err;
    return a;
  }
  Captured rebuild(const Frozen& a, const std::vector<std::string>& extra,
                   std::optional<std::vector<std::string>> env = std::nullopt) {
    std::vector<std::string> args = {
        "rebuild", receipt_path("orig"), "--admission", a.path, "--state-dir",
        state_,    "--mechanism",        "bwrap"};
    args.insert(args.end(), extra.begin(), extra.end());
    return sealrun(args, std::move(env), 300000);
  }
};

TEST_F(ExplainTest, NamesTheVariationsThatAloneMakeADifference) {
  Frozen a = built("date -d @0 +%H%M > /out/tz; umask > /out/mask; echo same > /out/same");
  auto c = rebuild(a, {"--vary", "all", "--explain", "--json", "--id", "r"});
  ASSERT_EQ(c.status.code, 1) << c.out << c.err;
  json report = json::parse(c.out, nullptr, false);
  ASSERT_TRUE(report.is_object()) << c.out;
  EXPECT_EQ(report["causes"], json({"timezone", "umask"})) << c.out << c.err;
  ASSERT_FALSE(report["cause_rebuilds"].empty());
  // Each rebuild of the search is a rebuild of its own, with a receipt saying what it varied.
  for (const auto& probe : report["cause_rebuilds"]) {
    json r = receipt(probe["id"].get<std::string>());
    EXPECT_EQ(r["state"], "built") << probe.dump();
    EXPECT_EQ(r["rebuild_of"]["id"], "orig");
    EXPECT_EQ(r["rebuild_of"]["variations"].size(), probe["variations"].size());
  }
  // Bisection: about 2·k·log2(n) rebuilds for k causes among n variations (docs/rebuild.md).
  size_t n = report["rebuild_of"]["variations"].size();
  EXPECT_LE(report["cause_rebuilds"].size(), 2 * 2 * static_cast<size_t>(std::ceil(std::log2(n))));
  auto text = rebuild(a, {"--vary", "timezone,umask,locale", "--explain", "--id", "t"});
  EXPECT_EQ(text.status.code, 1) << text.err;
  EXPECT_NE(text.out.find("\ndiffers under: timezone, umask\n"), std::string::npos) << text.out;
  // One variation is its own cause; no search.
  auto one = rebuild(a, {"--vary", "umask", "--explain", "--json", "--id", "one"});
  json single = json::parse(one.out, nullptr, false);
  EXPECT_EQ(single["causes"], json({"umask"})) << one.out;
  EXPECT_TRUE(single["cause_rebuilds"].empty());
  // Identical: nothing to search.
  auto same = rebuild(a, {"--vary", "hostname,locale", "--explain", "--json", "--id", "same"});
  EXPECT_EQ(same.status.code, 0) << same.out << same.err;
  EXPECT_FALSE(json::parse(same.out, nullptr, false).contains("causes")) << same.out;
}

TEST_F(ExplainTest, DiffoscopeReportsFromItsSandbox) {
  auto diffoscope = find_program("diffoscope");
  ASSERT_TRUE(diffoscope) << "diffoscope is in .ci/packages-test.txt";
  Frozen a = built("echo $(cat /proc/sys/kernel/hostname) > /out/name.txt");
  auto c = rebuild(a, {"--vary", "hostname", "--explain", "--json", "--id", "r"});
  ASSERT_EQ(c.status.code, 1) << c.out << c.err;
  json e = json::parse(c.out, nullptr, false)["explain"][0];
  ASSERT_EQ(e["how"], "diffoscope") << e.dump();
  std::string report = e["report"].get<std::string>();
  EXPECT_NE(report.find("/explain/a/name.txt"), std::string::npos) << report;
  EXPECT_NE(report.find("+sealrun-rebuild"), std::string::npos) << report;
  EXPECT_TRUE(fs::exists(e["kept"].get<std::string>()));
  // Its scratch directory is gone, and so is its resource group.
  for (const auto& entry : fs::recursive_directory_iterator(state_ + "/tmp"))
    ADD_FAILURE() << "left behind: " << entry.path();
}

// A loopback listener on the host, to see whether the sandbox can reach it.
struct Listener {
  UniqueFd fd;
  int port = 0;
  Listener() {
    fd = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(fd.get(), 4) != 0 ||
        ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0)
      ADD_FAILURE() << "no loopback listener";
    port = ntohs(addr.sin_port);
  }
  bool was_reached() const { return ::accept4(fd.get(), nullptr, nullptr, SOCK_CLOEXEC) >= 0; }
};

TEST_F(ExplainTest, AHostileDiffoscopeCannotWriteTheOriginalsNorReachTheNetwork) {
  // The outputs: one under a hostile name, and a planted symlink to a host file.
  std::string secret = dir_ / "secret";
  write_text(secret, "host secret\n");
  std::string evil = "-x $(touch pwned); --output=y";
  Frozen a = built("h=$(cat /proc/sys/kernel/hostname); echo $h > '/out/" + evil + "'; ln -s " +
                   secret + " /out/link-$h; echo $h > /out/plain");
  std::string original = state_ + "/results/orig/out/plain";
  Listener listener;
  // The stand-in records what it could do; the controller reads its stdout as the report.
  std::string fake = dir_ / "fake-diffoscope";
  std::string script = R"sh(#!/bin/sh
try() { if (eval "$2") >/dev/null 2>&1; then echo "$1: DONE"; else echo "$1: denied"; fi; }
echo "args: $6|$7"
try write-copy "echo x >> '$6'"
try write-copy-dir "touch /explain/a/new"
try write-original "echo x >> @ORIGINAL@"
try read-original "cat @ORIGINAL@"
try read-secret "cat @SECRET@"
try write-usr "touch /usr/pwned"
try write-tmp "echo x > /tmp/mine"
try bash "bash -c true"
try net "bash -c 'echo hi > /dev/tcp/127.0.0.1/@PORT@'"
echo "uid: $(id -u)"
echo "interfaces: $(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ')"
# Its resource group allows 256 processes: a shell that starts 300 cannot.
if sh -c 'i=0; while [ $i -lt 300 ]; do sleep 2 & i=$((i+1)); done; wait' 2>&1 | grep -q fork
then echo "pids: limited"; else echo "pids: unlimited"; fi
exit 1
)sh";
  auto put = [&](const std::string& key, const std::string& value) {
    for (size_t at; (at = script.find(key)) != std::string::npos;)
      script.replace(at, key.size(), value);
  };
  put("@ORIGINAL@", original);
  put("@SECRET@", secret);
  put("@PORT@", std::to_string(listener.port));
  write_text(fake, script);
  fs::permissions(fake, fs::perms(0755));
  fs::permissions(dir_.path(), fs::perms(0711));
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  env.push_back("SEALRUN_TEST_DIFFOSCOPE=" + fake);
  auto c = rebuild(a, {"--vary", "hostname", "--explain", "--json", "--id", "r"}, env);
  ASSERT_EQ(c.status.code, 1) << c.out << c.err;
  json report = json::parse(c.out, nullptr, false);
  std::string said;
  for (const auto& e : report["explain"]) {
    if (e["path"] == "plain") said = e.value("report", "");
    if (e["path"].get<std::string>().rfind("link-", 0) == 0) {
      EXPECT_EQ(e["how"], "none") << "a symlink is never opened: " << e.dump();
    }
  }
  ASSERT_FALSE(said.empty()) << c.out << c.err;
  EXPECT_NE(said.find("args: /explain/a/plain|/explain/b/plain"), std::string::npos) << said;
  for (const char* line :
       {"write-copy: denied", "write-copy-dir: denied", "write-original: denied",
        "read-original: denied", "read-secret: denied", "write-usr: denied", "net: denied"})
    EXPECT_NE(said.find(line), std::string::npos) << line << "\n" << said;
  EXPECT_EQ(said.find("uid: 0\n"), std::string::npos) << said;
  EXPECT_NE(said.find("pids: limited"), std::string::npos) << said;
  // The checks can succeed: its own /tmp is writable, and the shell the network check uses runs.
  EXPECT_NE(said.find("write-tmp: DONE"), std::string::npos) << said;
  EXPECT_NE(said.find("bash: DONE"), std::string::npos) << said;
  EXPECT_NE(said.find("interfaces: lo\n"), std::string::npos) << said;
  EXPECT_FALSE(listener.was_reached());
  EXPECT_EQ(read_text(original), "sealrun\n");
  EXPECT_FALSE(fs::exists(dir_ / "pwned"));
  EXPECT_FALSE(fs::exists(state_ + "/pwned"));
  // The hostile name reached the stand-in as one argument below /explain/a.
  for (const auto& e : report["explain"])
    if (e["path"].get<std::string>() == evil) {
      EXPECT_NE(e.value("report", "").find("args: /explain/a/" + evil + "|/explain/b/" + evil),
                std::string::npos)
          << e.dump();
    }
}

}  // namespace
}  // namespace sealrun::testing
