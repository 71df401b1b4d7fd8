// SPDX-License-Identifier: Apache-2.0
// RunTest: see run_test_support.h.
#include "tests/controller/run_test_support.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <filesystem>

#include "tests/support/temp_dir.h"

namespace sealrun::testing {

namespace fs = std::filesystem;

void RunTest::SetUp() {
  src_ = dir_ / "src";
  toolchain_ = dir_ / "toolchain";
  state_ = dir_ / "state";
  fs::create_directories(src_);
  fs::create_directories(toolchain_);
  write_text(src_ + "/input.txt", "input\n");
  write_text(toolchain_ + "/tool.txt", "a toolchain file\n");
}

std::string sealrun_binary() { return std::string(SEALRUN_BINARY_DIR) + "/sealrun"; }

SpawnOptions RunTest::sealrun_options(const std::vector<std::string>& args) const {
  SpawnOptions o;
  o.argv = {sealrun_binary()};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.cwd = dir_.str();
  return o;
}

Captured RunTest::sealrun(const std::vector<std::string>& args,
                          std::optional<std::vector<std::string>> env, int64_t timeout_ms) {
  SpawnOptions o = sealrun_options(args);
  o.env = std::move(env);
  auto r = run_capture(o, timeout_ms);
  EXPECT_TRUE(r.ok()) << r.error().message();
  Captured c = r.ok() ? *r : Captured{};
  // `run` prints its receipt's path last: remember it under the run's id.
  auto id = std::find(args.begin(), args.end(), "--id");
  if (!args.empty() && args[0] == "run" && id != args.end() && id + 1 != args.end()) {
    std::string out = c.out;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    std::string last = out.substr(out.rfind('\n') == std::string::npos ? 0 : out.rfind('\n') + 1);
    if (last.size() > 5 && last.compare(last.size() - 5, 5, ".json") == 0)
      printed_receipts_[*(id + 1)] = last;
  }
  return c;
}

std::vector<std::string> RunTest::freeze_args(const std::string& name) const {
  return {"admit",       "freeze",      "--out",    dir_ / name,         "--source",
          src_,          "--toolchain", toolchain_, "--toolchain-mount", "/opt/toolchain",
          "--state-dir", state_};
}

Frozen RunTest::freeze(const std::string& script, const std::vector<std::string>& sets,
                       const std::string& name, const std::vector<std::string>& extra) {
  std::vector<std::string> args = freeze_args(name);
  args.insert(args.end(),
              {"--env", "PATH=/usr/bin:/bin", "--set", "limits.census_interval_ms=200"});
  for (const auto& s : sets) {
    args.push_back("--set");
    args.push_back(s);
  }
  auto shell = busybox_tree_args();
  args.insert(args.end(), shell.begin(), shell.end());
  // A job that runs python3 gets a /usr holding python3 only (the host's is not in the view).
  if (script.find("/usr/bin/python3") != std::string::npos) {
    auto python = python_tree_args();
    args.insert(args.end(), python.begin(), python.end());
  }
  args.insert(args.end(), extra.begin(), extra.end());
  args.insert(args.end(), {"--", "/bin/sh", "-c", script});
  auto c = sealrun(args);
  EXPECT_EQ(c.status.code, 0) << c.err;
  return {dir_ / name, c.out.substr(0, 64)};
}

Frozen RunTest::freeze_for(const std::string& mechanism, const std::string& script,
                           const std::string& name, const std::vector<std::string>& extra) {
  if (mechanism == "bwrap") return freeze(script, {}, name, extra);
  auto built = busybox_fixture_dir();
  EXPECT_TRUE(built.ok()) << built.error().message();
  std::vector<std::string> args = freeze_args(name);
  args.insert(args.end(), {"--image", (built.ok() ? *built : "") + "/busybox.oci.tar"});
  args.insert(args.end(), extra.begin(), extra.end());
  args.insert(args.end(), {"--", "/bin/sh", "-c", script});
  auto c = sealrun(args);
  EXPECT_EQ(c.status.code, 0) << c.err;
  // Rootless podman takes its storage by path, as the job user: the parents must be searchable.
  fs::permissions(dir_.path(),
                  fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  return {dir_ / name, c.out.substr(0, 64)};
}

Captured RunTest::run(const Frozen& a, const std::string& id,
                      const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"run",  a.path, "--sha256",    a.sha256,
                                   "--id", id,     "--state-dir", state_};
  args.insert(args.end(), extra.begin(), extra.end());
  return sealrun(args);
}

std::string RunTest::receipt_path(const std::string& id) const {
  auto it = printed_receipts_.find(id);
  if (it != printed_receipts_.end()) return it->second;
  return state_ + "/results/" + id + "/receipt.json";
}

nlohmann::json RunTest::receipt(const std::string& id) {
  std::string text = read_text(receipt_path(id));
  auto doc = nlohmann::json::parse(text, nullptr, false);
  EXPECT_FALSE(doc.is_discarded()) << "receipt of " << id << " is not JSON: " << text;
  return doc;
}

namespace {

// A fixture made just now (here or by a parallel test): lets the second it was made in pass, so
// that the digest cache (which re-hashes a file changed within the second it was hashed in)
// treats it like any older tree, and tests that count cache hits see them from the first pin on.
// The rename into place is the last change (it sets the directory's ctime).
void wait_past_the_second_made(const std::string& dir) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return;
  while (::time(nullptr) <= st.st_ctim.tv_sec) ::usleep(50 * 1000);
}

}  // namespace

Result<std::string> busybox_bin_dir() {
  std::string dir = std::string(SEALRUN_BINARY_DIR) + "/fixtures/busybox-bin";
  if (fs::exists(dir + "/busybox")) {
    wait_past_the_second_made(dir);
    return dir;
  }
  // Made beside and renamed into place, so parallel tests never see half a directory.
  std::string tmp = dir + ".tmp." + std::to_string(::getpid());
  std::error_code ec;
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  if (ec) return Error::make("mkdir " + tmp + ": " + ec.message());
  fs::copy_file("/bin/busybox", tmp + "/busybox", ec);
  if (ec) return Error::make("copy /bin/busybox (apt-get install busybox-static): " + ec.message());
  fs::permissions(tmp, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                           fs::perms::others_read | fs::perms::others_exec);
  SpawnOptions o;
  o.argv = {"/bin/busybox", "--list"};
  auto list = SEALRUN_TRY(run_capture(o, 10000));
  size_t start = 0;
  while (start < list.out.size()) {
    size_t end = list.out.find('\n', start);
    if (end == std::string::npos) end = list.out.size();
    std::string applet = list.out.substr(start, end - start);
    start = end + 1;
    if (applet.empty() || applet == "busybox") continue;
    fs::create_symlink("busybox", tmp + "/" + applet, ec);
  }
  if (::rename(tmp.c_str(), dir.c_str()) != 0) fs::remove_all(tmp, ec);  // another test won
  if (!fs::exists(dir + "/busybox")) return Error::make("could not make " + dir);
  wait_past_the_second_made(dir);
  return dir;
}

std::vector<std::string> busybox_tree_args() {
  auto dir = busybox_bin_dir();
  EXPECT_TRUE(dir.ok()) << dir.error().message();
  return {"--tree", (dir.ok() ? *dir : std::string("/nonexistent")) + "=/bin"};
}

Result<std::string> fixture_made_by(const std::string& script) {
  std::string fixtures = std::string(SEALRUN_BINARY_DIR) + "/fixtures";
  SpawnOptions o;
  o.argv = {"/bin/bash", std::string(SEALRUN_SOURCE_DIR) + "/tests/fixtures/" + script, fixtures};
  auto built = SEALRUN_TRY(run_capture(o, 300000));
  if (!built.status.success()) return Error::make(script + " failed: " + built.err);
  return fixtures;
}

std::vector<std::string> python_tree_args() {
  auto fixtures = fixture_made_by("python_usr.sh");
  EXPECT_TRUE(fixtures.ok()) << fixtures.error().message();
  return {"--tree", (fixtures.ok() ? *fixtures : std::string("/nonexistent")) + "/python-usr=/usr"};
}

Result<std::string> busybox_fixture_dir() {
  std::string fixtures = std::string(SEALRUN_BINARY_DIR) + "/fixtures";
  if (fs::exists(fixtures + "/busybox.oci.tar")) return fixtures;
  return fixture_made_by("busybox_image.sh");
}

int64_t owned_fs_controller(const std::string& state, const std::string& fs_id) {
  auto record =
      nlohmann::json::parse(read_text(state + "/ownedfs/" + fs_id + ".json"), nullptr, false);
  if (!record.is_object() || !record.contains("controller_pid")) return 0;
  return record["controller_pid"].get<int64_t>();
}

std::string live_path(const std::string& state, const std::string& fs_id, const std::string& path) {
  // The owned file systems are mounted in the controller's private mount namespace
  // (containment/ownedfs/private_ns.h): seen through the controller's /proc/PID/root, the
  // controller named by the file system's record.
  int64_t pid = owned_fs_controller(state, fs_id);
  if (pid <= 0) return path;
  std::string root = "/proc/" + std::to_string(pid) + "/root";
  std::error_code ec;
  std::string abs = fs::absolute(path, ec).string();
  return fs::exists(root, ec) ? root + abs : path;
}

std::string live_out_dir(const std::string& state, const std::string& id) {
  std::string space = live_path(state, id + "+out", state + "/owned/" + id + "+out/out");
  std::error_code ec;
  return fs::is_directory(space, ec) ? space : state + "/results/" + id + "/out";
}

std::string live(const std::string& state, const std::string& path) {
  const std::string owned = state + "/owned/";
  if (path.compare(0, owned.size(), owned) != 0) return path;
  std::string id = path.substr(owned.size(), path.find('/', owned.size()) - owned.size());
  return live_path(state, id, path);
}

bool no_process_with(const std::string& marker) {
  for (const auto& entry : fs::directory_iterator("/proc")) {
    std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = read_text(entry.path() / "cmdline");
    std::string stat = read_text(entry.path() / "stat");
    bool zombie = stat.find(") Z ") != std::string::npos;
    for (char& c : cmdline)
      if (c == '\0') c = ' ';
    if (!zombie && cmdline.find(marker) != std::string::npos &&
        cmdline.find("gtest") == std::string::npos && name != std::to_string(::getpid()))
      return false;
  }
  return true;
}

}  // namespace sealrun::testing
