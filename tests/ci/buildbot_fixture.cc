// SPDX-License-Identifier: Apache-2.0
// The Buildbot fixture (buildbot_fixture.h): a network namespace held by a sleeping child, the
// master and worker created from the shipped files in the test's temp dir and started in that
// namespace in the foreground as the test's children, so that they cannot outlive it.
#include "tests/ci/buildbot_fixture.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <thread>

#include "core/unique_fd.h"
#include "tests/support/temp_dir.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Polls `ready` (cheap checks of files the daemons write) until it holds or `seconds` pass.
bool wait_until(const std::function<bool()>& ready, int seconds) {
  auto deadline = Clock::now() + std::chrono::seconds(seconds);
  while (Clock::now() < deadline) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return ready();
}

bool file_has(const std::string& path, const std::string& text) {
  std::error_code ec;
  return fs::exists(path, ec) && read_text(path).find(text) != std::string::npos;
}

// Starts `argv` in the foreground (--nodaemon) as our child, its output into `log`.
std::optional<Child> start(const std::vector<std::string>& argv,
                           const std::vector<std::string>& env, const std::string& cwd,
                           const std::string& log) {
  SpawnOptions o;
  o.argv = argv;
  o.env = env;
  o.cwd = cwd;
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

}  // namespace

void Buildbot::SetUp() {
  RunTest::SetUp();
  master_ = dir_ / "master";
  worker_ = dir_ / "worker";
  bb_state_ = dir_ / "bb-state";
  // The worker's environment is what its build steps see; the master's settings (and the
  // worker's password) are the master's alone.
  env_ = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + dir_.str(), "LANG=C.UTF-8"};
  if (const char* job_user = ::getenv("SEALRUN_JOB_USER"))
    env_.push_back("SEALRUN_JOB_USER=" + std::string(job_user));
  master_env_ = env_;
  master_env_.insert(
      master_env_.end(),
      {"SEALRUN_CI_WORKER=sealrun-worker", "SEALRUN_CI_WORKER_PASSWORD=worker-secret",
       "SEALRUN_CI_CHANGE_AUTH=change:change-secret", "SEALRUN_CI_STATE_DIR=" + bb_state_,
       "SEALRUN_CI_SEALRUN=" + std::string(SEALRUN_BINARY_DIR) + "/sealrun"});
  // The namespace: lo up, nothing else; the holder sleeps until the test ends.
  std::string ready = dir_ / "netns-ready";
  net_holder_ = start({"/usr/bin/unshare", "-n", "--", "/bin/sh", "-c",
                       "ip link set lo up && : > \"$0\" && exec sleep 100000", ready},
                      env_, dir_.str(), dir_ / "netns.out");
  ASSERT_TRUE(net_holder_.has_value());
  ASSERT_TRUE(wait_until([&] { return fs::exists(ready); }, 30)) << read_text(dir_ / "netns.out");
  netns_ = "/proc/" + std::to_string(net_holder_->pid()) + "/ns/net";

  auto create = tool({"/usr/bin/buildbot", "create-master", "-q", master_});
  ASSERT_EQ(create.status.code, 0) << create.out << create.err;
  const std::string contrib = std::string(SEALRUN_SOURCE_DIR) + "/contrib/ci/buildbot";
  fs::copy_file(contrib + "/master.cfg", master_ + "/master.cfg",
                fs::copy_options::overwrite_existing);
  // As a site installs it: sealrun_www next to master.cfg (or in /usr/share/sealrun/buildbot).
  fs::copy(contrib + "/sealrun_www", master_ + "/sealrun_www", fs::copy_options::recursive);
  auto worker = tool({"/usr/bin/buildbot-worker", "create-worker", "-q", worker_, "127.0.0.1:9989",
                      "sealrun-worker", "worker-secret"});
  ASSERT_EQ(worker.status.code, 0) << worker.out << worker.err;
  // The state directory signs its receipts: its key is STATE/keys/sealrun.key.
  fs::create_directories(bb_state_);
  auto key = sealrun({"key", "generate", "--out-dir", bb_state_ + "/keys"});
  ASSERT_EQ(key.status.code, 0) << key.out << key.err;
}

void Buildbot::TearDown() {
  // Worker first (it may be mid-build), then the master; SIGTERM is twistd's clean shutdown.
  for (auto* c : {&worker_proc_, &master_proc_, &net_holder_}) {
    if (!c->has_value() || !(*c)->running()) continue;
    (void)(*c)->signal(SIGTERM);
    auto done = (*c)->wait_for(30000);
    if (!done.ok() || !done->has_value()) (*c)->kill_and_reap();
  }
  EXPECT_TRUE(no_process_with(dir_.str())) << "a process of this test outlived it";
}

std::vector<std::string> Buildbot::in_net(const std::vector<std::string>& argv) const {
  std::vector<std::string> out = {"/usr/bin/nsenter", "--net=" + netns_, "--"};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

Captured Buildbot::tool(const std::vector<std::string>& argv) {
  SpawnOptions o;
  o.argv = netns_.empty() ? argv : in_net(argv);
  o.env = env_;
  o.cwd = dir_.str();
  auto r = run_capture(o, 120000, 16 << 20);
  EXPECT_TRUE(r.ok()) << r.error().message();
  return r.ok() ? *r : Captured{};
}

void Buildbot::start_master_and_worker() {
  master_proc_ = start(in_net({"/usr/bin/buildbot", "start", "--nodaemon", master_}), master_env_,
                       dir_.str(), dir_ / "master.out");
  ASSERT_TRUE(master_proc_.has_value());
  ASSERT_TRUE(
      wait_until([&] { return file_has(master_ + "/twistd.log", "BuildMaster is running"); }, 90))
      << read_text(master_ + "/twistd.log") << read_text(dir_ / "master.out");
  worker_proc_ = start(in_net({"/usr/bin/buildbot-worker", "start", "--nodaemon", worker_}), env_,
                       dir_.str(), dir_ / "worker.out");
  ASSERT_TRUE(worker_proc_.has_value());
  ASSERT_TRUE(wait_until(
      [&] { return file_has(master_ + "/twistd.log", "Worker sealrun-worker attached"); }, 90))
      << read_text(master_ + "/twistd.log") << read_text(worker_ + "/twistd.log");
}

void Buildbot::send_change(const Frozen& admission, const std::string& revision) {
  auto c = tool({"/usr/bin/buildbot", "sendchange", "--master", "127.0.0.1:9989", "--auth",
                 "change:change-secret", "--who", "ci-test", "--branch", "main", "--revision",
                 revision, "--property", "admission:" + admission.path, "--property",
                 "admission_sha256:" + admission.sha256, "--comments", "gated build", "input.txt"});
  ASSERT_EQ(c.status.code, 0) << c.out << c.err;
}

nlohmann::json Buildbot::finished_builds() {
  auto c =
      tool({"/usr/bin/python3", std::string(SEALRUN_SOURCE_DIR) + "/tests/ci/buildbot_builds.py",
            master_ + "/state.sqlite"});
  if (c.status.code != 0) return nlohmann::json::array();  // e.g. the database is being written
  auto doc = nlohmann::json::parse(c.out, nullptr, false);
  return doc.is_array() ? doc : nlohmann::json::array();
}

nlohmann::json Buildbot::wait_for_build(int number) {
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

std::string Buildbot::kept_dir(const nlohmann::json& build) const {
  return master_ + "/receipts/sealrun/" + build["properties"]["sealrun_id"].get<std::string>();
}

nlohmann::json Buildbot::kept_receipt(const nlohmann::json& build) {
  std::string path = kept_dir(build) + "/receipt.json";
  EXPECT_TRUE(fs::is_regular_file(path)) << path;
  auto doc = nlohmann::json::parse(read_text(path), nullptr, false);
  EXPECT_FALSE(doc.is_discarded()) << path;
  return doc;
}

int step_result(const nlohmann::json& build, const std::string& name) {
  for (const auto& s : build["steps"])
    if (s["name"] == name) return s["results"].is_null() ? -1 : s["results"].get<int>();
  return -2;
}

}  // namespace sealrun::testing
