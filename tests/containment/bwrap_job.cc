// SPDX-License-Identifier: Apache-2.0
// See bwrap_job.h.
#include "tests/containment/bwrap_job.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "containment/view_plan.h"

namespace sealrun::testing {

namespace fs = std::filesystem;

BwrapFixture::BwrapFixture() {
  // The temp dir itself is root-only: the job user can reach its contents only through the
  // descriptors sealrun opens.
  ::chmod(dir_.str().c_str(), 0700);
  auto user = lookup_job_user(testing::test_job_user_name());
  if (!user.ok())
    ADD_FAILURE() << user.error().message();
  else
    user_ = *user;
  fs::create_directory(src_dir());
  ::chmod(src_dir().c_str(), 0755);
  fs::copy_file(SEALRUN_HOSTILE_PATH, src_dir() + "/hostile");
  ::chmod((src_dir() + "/hostile").c_str(), 0755);
  fs::create_directories(toolchain_dir() + "/bin");
  write_text(toolchain_dir() + "/bin/cc", "#!/bin/sh\necho toolchain\n");
  ::chmod(toolchain_dir().c_str(), 0755);
  ::chmod((toolchain_dir() + "/bin").c_str(), 0755);
  ::chmod((toolchain_dir() + "/bin/cc").c_str(), 0755);
  Status st = prepare_owned_dir(out_dir(), user_);
  if (!st.ok()) ADD_FAILURE() << st.error().message();
  mech_ = std::make_unique<BwrapMechanism>(BwrapOptions{});
}

ContainmentSpec BwrapFixture::spec(std::vector<std::string> hostile_args) const {
  static int counter = 0;
  ContainmentSpec s;
  s.run_id = "bwrap-test-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
  s.owned_root = dir_.str();
  s.argv = {"/src/hostile"};
  s.argv.insert(s.argv.end(), hostile_args.begin(), hostile_args.end());
  s.env = {{"PATH", "/usr/bin:/bin"}, {"SOURCE_DATE_EPOCH", "1"}};
  s.mounts = {{src_dir(), "/src", MountSpec::Access::kReadOnly},
              {toolchain_dir(), "/toolchain", MountSpec::Access::kReadOnly},
              {out_dir(), "/out", MountSpec::Access::kWritable},
              // A job sees only what is pinned (docs/view.md); these mechanism tests run the
              // host's tools (unshare, sh), so the host's /usr is their pinned tree.
              {"/usr", "/usr", MountSpec::Access::kReadOnly, ViewKind::kTree, "test: host /usr"}};
  add_compat_links(read_host_compat_links(), &s);
  s.requested = DimensionSet::all();
  s.required = {Dimension::kFilesystem, Dimension::kProcessTree, Dimension::kWallClock,
                Dimension::kNetwork,    Dimension::kSyscalls,    Dimension::kCapabilities};
  s.wall_clock_ms = 60000;
  s.stop_grace_ms = 1000;
  return s;
}

std::map<std::string, std::string> parse_kv(const std::string& text) {
  std::map<std::string, std::string> kv;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.pop_back();
    auto eq = line.find('=');
    if (eq != std::string::npos) kv[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return kv;
}

JobRun BwrapFixture::run(const ContainmentSpec& spec, resgroup::ResourceGroup* group, JobIo io,
                         const std::function<void(ContainedJob&)>& on_start) {
  JobRun r;
  GroupCapabilities groups;
  groups.memory = groups.process_count = group != nullptr;
  std::vector<Mechanism*> mechs{mech_.get()};
  auto grant = acquire_grant(spec, mechs, groups);
  if (!grant.ok()) {
    ADD_FAILURE() << grant.error().message();
    return r;
  }
  std::string out_path = dir_ / ("stdout-" + spec.run_id);
  std::string err_path = dir_ / ("stderr-" + spec.run_id);
  int out = ::open(out_path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  int err = ::open(err_path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (io.stdout_fd < 0) io.stdout_fd = out;
  if (io.stderr_fd < 0) io.stderr_fd = err;
  auto job = mech_->spawn(*grant, group, io);
  if (!job.ok()) {
    ADD_FAILURE() << job.error().message() << "\nstderr: " << read_text(err_path);
  } else {
    if (on_start) on_start(**job);
    auto exit = (*job)->wait();
    if (!exit.ok())
      ADD_FAILURE() << exit.error().message();
    else
      r.exit = *exit;
    auto cleanup = (*job)->cleanup();
    if (!cleanup.ok())
      ADD_FAILURE() << cleanup.error().message();
    else
      r.cleanup = *cleanup;
  }
  ::close(out);
  ::close(err);
  r.out = read_text(out_path);
  r.err = read_text(err_path);
  r.kv = parse_kv(r.out);
  if (::getenv("SEALRUN_TEST_VERBOSE") != nullptr)
    std::fprintf(stderr, "--- %s: %s\nstdout:\n%sstderr:\n%s\n", spec.run_id.c_str(),
                 r.exit.status.describe().c_str(), r.out.c_str(), r.err.c_str());
  return r;
}

bool pidfd_has_exited(int pidfd, int timeout_ms) {
  struct pollfd p {
    pidfd, POLLIN, 0
  };
  return ::poll(&p, 1, timeout_ms) == 1;
}

}  // namespace sealrun::testing
