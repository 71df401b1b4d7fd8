// SPDX-License-Identifier: Apache-2.0
// diffoscope in a sandbox of its own: see explain_sandbox.h.
#include "controller/rebuild/explain_sandbox.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>

#include "containment/grant.h"
#include "containment/resgroup/resource_group.h"
#include "containment/spec.h"
#include "containment/view_plan.h"
#include "controller/common/display_text.h"
#include "core/syscall.h"
#include "core/temp_dir.h"

namespace sealrun::run {

namespace {

// A 0644 copy of what `fd` holds at `path`.
Status copy_out(int fd, const std::string& path) {
  auto out = SEALRUN_TRY(open_at(AT_FDCWD, path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0644));
  char buf[65536];
  for (off_t at = 0;;) {
    ssize_t n = ::pread(fd, buf, sizeof buf, at);
    if (n < 0) return Error::from_errno("read an output to explain");
    if (n == 0) break;
    if (::write(out.get(), buf, static_cast<size_t>(n)) != n)
      return Error::from_errno("copy " + path);
    at += n;
  }
  if (::fchmod(out.get(), 0644) != 0) return Error::from_errno(path);
  return ok_status();
}

// At most `max` bytes of `fd` from its start.
std::string read_head(int fd, size_t max) {
  std::string out(max, '\0');
  ssize_t n = ::pread(fd, out.data(), max, 0);
  out.resize(n < 0 ? 0 : static_cast<size_t>(n));
  return out;
}

bool below_usr(const std::string& path) { return path.rfind("/usr/", 0) == 0; }

}  // namespace

Result<std::string> contained_diffoscope(const MechanismContext& context,
                                         const std::string& program, int fa, int fb,
                                         const std::string& name, const SandboxLimits& limits) {
  // $TMPDIR is the rebuild's controller temporaries (STATE/tmp/<pid>.<start>), which each run of
  // the pipeline makes and removes: made again here when gone, and removed again after.
  const char* tmp = ::getenv("TMPDIR");
  std::string parent = tmp && *tmp ? tmp : "/tmp";
  struct RemoveMade {
    std::string path;
    ~RemoveMade() {
      if (!path.empty()) (void)::rmdir(path.c_str());
    }
  } made{::mkdir(parent.c_str(), 0700) == 0 ? parent : ""};
  std::string templ = parent + "/sealrun-explain-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) return Error::from_errno("make " + templ);
  const std::string dir = templ;
  struct Remove {
    std::string path;
    ~Remove() { remove_tree_forcibly(path); }
  } remove{dir};
  // The root's own directory (0711): the job user reaches the copies and nothing else here.
  if (::chmod(dir.c_str(), 0711) != 0) return Error::from_errno(dir);
  size_t slash = name.rfind('/');
  std::string base = slash == std::string::npos ? name : name.substr(slash + 1);
  if (base.empty() || base == "." || base == "..") base = "output";
  for (const char* d : {"/owned", "/a", "/b"})
    if (::mkdir((dir + d).c_str(), 0755) != 0 || ::chmod((dir + d).c_str(), 0755) != 0)
      return Error::from_errno("mkdir " + dir + d);
  if (::chmod((dir + "/owned").c_str(), 0711) != 0) return Error::from_errno(dir + "/owned");
  SEALRUN_TRY(copy_out(fa, dir + "/a/" + base));
  SEALRUN_TRY(copy_out(fb, dir + "/b/" + base));
  auto report = SEALRUN_TRY(open_at(AT_FDCWD, dir + "/report", O_RDWR | O_CREAT | O_EXCL, 0600));
  auto errors = SEALRUN_TRY(open_at(AT_FDCWD, dir + "/errors", O_RDWR | O_CREAT | O_EXCL, 0600));

  static std::atomic<int> serial{0};
  ContainmentSpec spec;
  spec.run_id = fmt::format("explain-{}-{}", ::getpid(), ++serial);
  spec.owned_root = dir + "/owned";
  // Paths of its own, never a name the job chose as the first argument (an option's dash).
  spec.argv = {program,
               "--no-progress",
               "--text",
               "-",
               "--max-report-size",
               std::to_string(limits.report_bytes),
               "/explain/a/" + base,
               "/explain/b/" + base};
  spec.cwd = "/tmp";
  spec.env = {
      {"PATH", "/usr/bin:/bin"}, {"LC_ALL", "C.UTF-8"}, {"HOME", "/tmp"}, {"TMPDIR", "/tmp"}};
  using Access = MountSpec::Access;
  spec.mounts.push_back({"/usr", "/usr", Access::kReadOnly, ViewKind::kTree, "host"});
  spec.mounts.push_back({dir + "/a", "/explain/a", Access::kReadOnly, ViewKind::kTree, "copy"});
  spec.mounts.push_back({dir + "/b", "/explain/b", Access::kReadOnly, ViewKind::kTree, "copy"});
  if (!below_usr(program))
    spec.files_and_links.push_back({program, ViewKind::kClosure, program, "host", false, {}, -1});
  // The dynamic linker's cache: diffoscope's libarchive binding finds its library through it
  // (ctypes asks `ldconfig -p`). The rest of its /etc is the generated files (passwd, hosts).
  for (const char* file : {"/etc/ld.so.cache"})
    if (::access(file, R_OK) == 0)
      spec.files_and_links.push_back({file, ViewKind::kClosure, file, "host", false, {}, -1});
  add_compat_links(read_host_compat_links(), &spec);
  spec.requested = DimensionSet::all();
  spec.required = spec.requested;
  spec.memory_max_bytes = limits.memory_max_bytes;
  spec.memory_high_bytes = limits.memory_max_bytes;
  spec.swap_max_bytes = 0;
  spec.pids_max = limits.pids_max;
  spec.wall_clock_ms = limits.wall_clock_ms;
  spec.stop_grace_ms = 1000;

  auto mechanism = SEALRUN_TRY(make_mechanism(MechanismKind::kBwrap, context));
  auto probes = resgroup::probe_backends();
  auto grant = SEALRUN_TRY_CTX(acquire_grant(spec, {mechanism.get()}, group_capabilities(probes)),
                               "no sandbox for diffoscope");
  auto own = SEALRUN_TRY(mechanism->own_view_entries(grant.spec));
  for (ViewEntry& e : own) grant.spec.files_and_links.push_back(std::move(e));
  auto group = SEALRUN_TRY_CTX(
      resgroup::create_group(spec.run_id,
                             {limits.memory_max_bytes, limits.memory_max_bytes, 0, limits.pids_max},
                             probes),
      "diffoscope's resource group");
  struct StopGroup {
    resgroup::ResourceGroup* g;
    ~StopGroup() {
      (void)g->stop(1000);
      (void)g->remove();
    }
  } stop_group{group.get()};
  JobIo io{-1, report.get(), errors.get(), {}};
  auto job = SEALRUN_TRY_CTX(mechanism->spawn(grant, group.get(), io), "start diffoscope");
  auto exit = job->wait();
  (void)job->cleanup();
  if (!exit) return Error::make("diffoscope: " + exit.error().message());
  if (exit->timed_out)
    return Error::make(
        fmt::format("diffoscope stopped at its bound of {} s", limits.wall_clock_ms / 1000));
  // diffoscope exits 1 when the files differ: that is its report, not a failure.
  if (exit->status.code != 0 && exit->status.code != 1)
    return Error::make(fmt::format("diffoscope {}: {}", exit->status.describe(),
                                   display::escape_cut(read_head(errors.get(), 4096), 400)));
  return read_head(report.get(), limits.report_bytes);
}

}  // namespace sealrun::run
