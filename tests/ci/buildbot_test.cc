// SPDX-License-Identifier: Apache-2.0
// A real CI for real (label ci): Buildbot 3.7 (Debian's buildbot and buildbot-worker) with the
// shipped contrib/ci/buildbot/master.cfg, master and worker on a free loopback port in a temp
// dir. A change sent with `buildbot sendchange` names an admission and its SHA-256; the build's
// one step is `sealrun run` (the built executable, as root, like run_integration_test), and its
// receipt is uploaded to the master. Checked: the build is SUCCESS and the uploaded receipt says
// built; then a tampered admission (same SHA-256 claimed) makes the build EXCEPTION, the step's
// exit code 3, its receipt not_run. Waiting is on conditions (the master's log, its database),
// never a fixed sleep; master and worker are stopped and nothing with the temp dir in its command
// line is left running.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/unique_fd.h"
#include "tests/controller/run_test_support.h"
#include "tests/support/temp_dir.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Buildbot's result codes (buildbot.process.results).
constexpr int kSuccess = 0;
constexpr int kException = 4;

// A port the kernel just handed out on 127.0.0.1 and that is free again.
int free_loopback_port() {
  UniqueFd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return -1;
  socklen_t len = sizeof a;
  if (::getsockname(s.get(), reinterpret_cast<sockaddr*>(&a), &len) != 0) return -1;
  return ntohs(a.sin_port);
}

// Polls `ready` (cheap checks of files the daemons write) until it holds or `seconds` pass.
bool wait_until(const std::function<bool()>& ready, int seconds) {
  auto deadline = Clock::now() + std::chrono::seconds(seconds);
  while (Clock::now() < deadline) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return ready();
}

class Buildbot : public RunTest {
 protected:
  void SetUp() override {
    RunTest::SetUp();
    port_ = free_loopback_port();
    ASSERT_GT(port_, 0);
    master_ = dir_ / "master";
    worker_ = dir_ / "worker";
    // The worker's environment is what its build steps see; the master's settings (and the
    // worker's password) are the master's alone.
    env_ = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + dir_.str(), "LANG=C.UTF-8"};
    if (const char* job_user = ::getenv("SEALRUN_JOB_USER"))
      env_.push_back("SEALRUN_JOB_USER=" + std::string(job_user));
    master_env_ = env_;
    master_env_.insert(
        master_env_.end(),
        {"SEALRUN_CI_PB=tcp:" + std::to_string(port_) + ":interface=127.0.0.1",
         "SEALRUN_CI_WORKER=sealrun-worker", "SEALRUN_CI_WORKER_PASSWORD=worker-secret",
         "SEALRUN_CI_CHANGE_AUTH=change:change-secret",
         "SEALRUN_CI_SEALRUN=" + std::string(SEALRUN_BINARY_DIR) + "/sealrun"});
    auto create = tool({"/usr/bin/buildbot", "create-master", "-q", master_});
    ASSERT_EQ(create.status.code, 0) << create.out << create.err;
    fs::copy_file(std::string(SEALRUN_SOURCE_DIR) + "/contrib/ci/buildbot/master.cfg",
                  master_ + "/master.cfg", fs::copy_options::overwrite_existing);
    auto worker = tool({"/usr/bin/buildbot-worker", "create-worker", "-q", worker_,
                        "127.0.0.1:" + std::to_string(port_), "sealrun-worker", "worker-secret"});
    ASSERT_EQ(worker.status.code, 0) << worker.out << worker.err;
  }

  void TearDown() override {
    // Worker first (it may be mid-build), then the master; SIGTERM is twistd's clean shutdown.
    for (auto* c : {&worker_proc_, &master_proc_}) {
      if (!c->has_value() || !(*c)->running()) continue;
      (void)(*c)->signal(SIGTERM);
      auto done = (*c)->wait_for(30000);
      if (!done.ok() || !done->has_value()) (*c)->kill_and_reap();
    }
    EXPECT_TRUE(no_process_with(dir_.str())) << "a process of this test outlived it";
  }

  Captured tool(const std::vector<std::string>& argv) {
    SpawnOptions o;
    o.argv = argv;
    o.env = env_;
    o.cwd = dir_.str();
    auto r = run_capture(o, 120000);
    EXPECT_TRUE(r.ok()) << r.error().message();
    return r.ok() ? *r : Captured{};
  }

  // Starts a daemon in the foreground (--nodaemon) as our child: it cannot outlive the test.
  std::optional<Child> start(const std::vector<std::string>& argv,
                             const std::vector<std::string>& env, const std::string& log) {
    SpawnOptions o;
    o.argv = argv;
    o.env = env;
    o.cwd = dir_.str();
    o.new_session = true;
    o.die_with_parent = true;
    UniqueFd out(::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    o.stdout_fd = out.get();
    o.stderr_fd = out.get();
    auto c = spawn(o);
    EXPECT_TRUE(c.ok()) << c.error().message();
    if (!c.ok()) return std::nullopt;
    return std::move(*c);
  }

  bool log_has(const std::string& path, const std::string& text) {
    std::error_code ec;
    return fs::exists(path, ec) && read_text(path).find(text) != std::string::npos;
  }

  void start_master_and_worker() {
    master_proc_ = start({"/usr/bin/buildbot", "start", "--nodaemon", master_}, master_env_,
                         dir_ / "master.out");
    ASSERT_TRUE(master_proc_.has_value());
    ASSERT_TRUE(
        wait_until([&] { return log_has(master_ + "/twistd.log", "BuildMaster is running"); }, 90))
        << read_text(master_ + "/twistd.log") << read_text(dir_ / "master.out");
    worker_proc_ = start({"/usr/bin/buildbot-worker", "start", "--nodaemon", worker_}, env_,
                         dir_ / "worker.out");
    ASSERT_TRUE(worker_proc_.has_value());
    ASSERT_TRUE(wait_until(
        [&] { return log_has(master_ + "/twistd.log", "Worker sealrun-worker attached"); }, 90))
        << read_text(master_ + "/twistd.log") << read_text(worker_ + "/twistd.log");
  }

  void send_change(const Frozen& admission, const std::string& revision) {
    auto c =
        tool({"/usr/bin/buildbot", "sendchange", "--master", "127.0.0.1:" + std::to_string(port_),
              "--auth", "change:change-secret", "--who", "ci-test", "--branch", "main",
              "--revision", revision, "--property", "admission:" + admission.path, "--property",
              "admission_sha256:" + admission.sha256, "--comments", "gated build", "input.txt"});
    ASSERT_EQ(c.status.code, 0) << c.out << c.err;
  }

  nlohmann::json finished_builds() {
    auto c =
        tool({"/usr/bin/python3", std::string(SEALRUN_SOURCE_DIR) + "/tests/ci/buildbot_builds.py",
              master_ + "/state.sqlite"});
    if (c.status.code != 0) return nlohmann::json::array();  // e.g. the database is being written
    auto doc = nlohmann::json::parse(c.out, nullptr, false);
    return doc.is_array() ? doc : nlohmann::json::array();
  }

  // Waits for build `number` of the master to finish and returns what the database says of it.
  nlohmann::json wait_for_build(int number) {
    nlohmann::json found;
    bool done = wait_until(
        [&] {
          for (const auto& b : finished_builds())
            if (b["number"] == number) found = b;
          return !found.is_null();
        },
        120);
    EXPECT_TRUE(done) << "build " << number << " did not finish\n"
                      << read_text(master_ + "/twistd.log") << read_text(worker_ + "/twistd.log");
    return found;
  }

  // The receipt the build uploaded to the master.
  nlohmann::json uploaded_receipt(const nlohmann::json& build) {
    std::string id = build["properties"]["sealrun_id"];
    std::string path = master_ + "/receipts/sealrun/" + id + "/receipt.json";
    EXPECT_TRUE(fs::is_regular_file(path)) << path;
    auto doc = nlohmann::json::parse(read_text(path), nullptr, false);
    EXPECT_FALSE(doc.is_discarded()) << path;
    return doc;
  }

  int port_ = -1;
  std::string master_, worker_;
  std::vector<std::string> env_, master_env_;
  std::optional<Child> master_proc_, worker_proc_;
};

int step_result(const nlohmann::json& build, const std::string& name) {
  for (const auto& s : build["steps"])
    if (s["name"] == name) return s["results"].is_null() ? -1 : s["results"].get<int>();
  return -2;
}

TEST_F(Buildbot, AdmittedChangeBuildsAndATamperedAdmissionTurnsTheBuildRed) {
  start_master_and_worker();
  Frozen good = freeze("echo built > /out/hello.txt");

  send_change(good, "r1");
  nlohmann::json first = wait_for_build(1);
  ASSERT_FALSE(first.is_null());
  EXPECT_EQ(first["results"], kSuccess) << first.dump(2);
  EXPECT_EQ(step_result(first, "sealrun run"), kSuccess);
  EXPECT_EQ(step_result(first, "upload receipt"), kSuccess);
  nlohmann::json receipt = uploaded_receipt(first);
  EXPECT_EQ(receipt["state"], "built") << receipt.dump(2);
  EXPECT_EQ(receipt["admission_sha256"], good.sha256);
  EXPECT_EQ(receipt["id"], first["properties"]["sealrun_id"]);

  // The same approval (SHA-256) with different bytes: the command was changed after approval.
  std::string text = read_text(good.path);
  auto at = text.find("echo built");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 10, "echo owned");
  Frozen tampered{dir_ / "tampered.json", good.sha256};
  write_text(tampered.path, text);
  send_change(tampered, "r2");
  nlohmann::json second = wait_for_build(2);
  ASSERT_FALSE(second.is_null());
  EXPECT_EQ(second["results"], kException) << second.dump(2);
  EXPECT_EQ(step_result(second, "sealrun run"), kException);
  EXPECT_NE(second["run_log"].get<std::string>().find("program finished with exit code 3"),
            std::string::npos)
      << second["run_log"];
  nlohmann::json refused = uploaded_receipt(second);
  EXPECT_EQ(refused["exit"], 3) << refused.dump(2);
  EXPECT_NE(refused["state"], "built");
}

}  // namespace
}  // namespace sealrun::testing
