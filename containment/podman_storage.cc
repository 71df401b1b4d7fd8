// SPDX-License-Identifier: Apache-2.0
// The run's podman storage and mount access (see podman_storage.h).
#include "containment/podman_storage.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <system_error>

#include "core/bounded_file.h"
#include "core/proc.h"
#include "core/process.h"
#include "core/syscall.h"
#include "core/trusted_dir.h"

namespace sealrun::podman {

namespace fs = std::filesystem;

bool path_is_below(const std::string& path, const std::string& root) {
  if (root.empty() || path.size() <= root.size()) return false;
  if (path.compare(0, root.size(), root) != 0) return false;
  return root == "/" || path[root.size()] == '/';
}

MountAction decide_mount_action(const MountSpec& m, const MountFacts& f) {
  if (f.accessible_to_job_user) return MountAction::kBindAsIs;
  // Only root can copy what the job user cannot read, or give a directory away.
  if (!f.controller_is_root) return MountAction::kRefuse;
  if (m.access == MountSpec::Access::kReadOnly) return MountAction::kStageCopy;
  // A writable mount is the job's output: copying it would detach it from what the controller
  // collects, so it is handed to the job user instead, and only when provably the run's own.
  if (f.under_owned_root || f.empty_directory) return MountAction::kChownToJobUser;
  return MountAction::kRefuse;
}

namespace {

Status chown_path(const std::string& path, const JobUser& user) {
  if (!user.drop) return ok_status();
  if (::lchown(path.c_str(), user.uid, user.gid) != 0)
    return Error::from_errno(fmt::format("chown {} to {}", path, user.name));
  return ok_status();
}

// Runs a host tool as root (the controller), failing with its stderr.
Status run_as_controller(std::vector<std::string> argv, int64_t timeout_ms) {
  std::string what = describe_command(argv);
  argv[0] = SEALRUN_TRY(find_program(argv[0]));
  SpawnOptions o;
  o.argv = std::move(argv);
  o.env = std::vector<std::string>{"PATH=/usr/bin:/bin:/usr/sbin:/sbin", "LC_ALL=C"};
  auto c = SEALRUN_TRY(run_capture(std::move(o), timeout_ms, 64 * 1024));
  if (c.timed_out || !c.status.success())
    return Error::make(fmt::format("{}: {}: {}", what,
                                   c.timed_out ? "timed out" : c.status.describe(),
                                   last_stderr_line(c.err)));
  return ok_status();
}

// find(1) as the job user on the mount's root: prints it if it cannot be used. access(2) with the
// job user's real ids is the check the kernel makes when runc (as that user) binds it. Only the
// root is checked, on purpose: below it the job sees exactly what the job user may see, as under
// bwrap, and a toolchain such as /usr with one private directory must not be copied whole.
Result<bool> job_user_can_use_tree(const JobUser& user, const StorageLayout& layout,
                                   const std::string& path, bool writable) {
  std::string find = SEALRUN_TRY(find_program("find"));
  std::vector<std::string> argv = {find,        path, "-maxdepth", "0", "(", "!",
                                   "-readable", "-o", "-type",     "d", "!", "-executable"};
  if (writable) argv.insert(argv.end(), {"-o", "!", "-writable"});
  argv.insert(argv.end(), {")", "-print", "-quit"});
  auto c = SEALRUN_TRY(run_capture(as_job_user(user, layout, std::move(argv)), 120 * 1000, 4096));
  return !c.timed_out && c.status.success() && c.out.empty() && c.err.empty();
}

Result<bool> job_user_can_access(const JobUser& user, const StorageLayout& layout,
                                 const std::string& path, const std::string& test_flag) {
  std::string test = SEALRUN_TRY(find_program("test"));
  auto c =
      SEALRUN_TRY(run_capture(as_job_user(user, layout, {test, test_flag, path}), 10 * 1000, 4096));
  return !c.timed_out && c.status.success();
}

bool is_empty_directory(const std::string& path) {
  std::error_code ec;
  auto st = fs::symlink_status(path, ec);
  if (ec || !fs::is_directory(st)) return false;
  return fs::directory_iterator(path, ec) == fs::directory_iterator() && !ec;
}

uint64_t ticks(std::string_view s) {
  uint64_t v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

// Whether `pid` (pinned by `pidfd`) is one of this storage's processes: the job user's, started
// no earlier than `not_before` (a /proc starttime; empty: not checked), and running with the
// storage's XDG_RUNTIME_DIR — podman sets it for every process it starts (its pause process,
// conmon) and sealrun for every podman it runs, and no two storages share one.
bool runs_from_storage(pid_t pid, const StorageLayout& layout, const JobUser& user,
                       const std::string& not_before) {
  auto uid = process_real_uid(pid);
  if (!uid || *uid != user.uid) return false;
  auto start = process_starttime(pid);
  if (!start || (!not_before.empty() && ticks(*start) < ticks(not_before))) return false;
  auto environ = read_bounded_file(AT_FDCWD, fmt::format("/proc/{}/environ", pid), 256 * 1024);
  std::string want = "XDG_RUNTIME_DIR=" + layout.runtime_dir + '\0';
  return environ &&
         (environ->rfind(want, 0) == 0 || environ->find('\0' + want) != std::string::npos);
}

// Kills `pid` through a pidfd opened before the checks (a recycled pid is never hit) if it runs
// from this storage; reports what was done. Returns whether it was the storage's.
bool kill_storage_process(pid_t pid, const char* what, const StorageLayout& layout,
                          const JobUser& user, const std::string& not_before,
                          std::vector<std::string>& actions) {
  UniqueFd pidfd(pidfd_open_raw(pid, 0));
  if (!pidfd) {
    if (std::string_view(what) == "pause process")
      actions.push_back(fmt::format("podman pause process {}: already gone", pid));
    return false;
  }
  if (!runs_from_storage(pid, layout, user, not_before)) {
    if (std::string_view(what) == "pause process")
      actions.push_back(
          fmt::format("podman pause process {}: not this storage's, left alone", pid));
    return false;
  }
  pidfd_send_signal_raw(pidfd.get(), SIGKILL);
  struct pollfd p {
    pidfd.get(), POLLIN, 0
  };
  bool gone = retry_eintr([&] { return ::poll(&p, 1, 5000); }) > 0;
  actions.push_back(gone ? fmt::format("killed podman {} {}", what, pid)
                         : fmt::format("podman {} {}: still alive after KILL", what, pid));
  return true;
}

// The runroot link's directory: made when absent (0711: the job user passes through it, nobody
// but its owner writes it) and checked like every directory root writes into.
Result<UniqueFd> open_link_dir(const StorageLayout& layout) {
  if (::mkdir(layout.link_dir.c_str(), 0711) != 0 && errno != EEXIST)
    return Error::from_errno("mkdir " + layout.link_dir);
  auto dir = SEALRUN_TRY(open_at(AT_FDCWD, layout.link_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW));
  SEALRUN_TRY(
      check_trusted_dir(SEALRUN_TRY(fstat_fd(dir.get(), layout.link_dir)), layout.link_dir, false));
  return dir;
}

std::string link_name(const StorageLayout& layout) {
  return layout.run_root_link.substr(layout.run_root_link.rfind('/') + 1);
}

// The target of `name` in `dirfd` when it is a symlink, else "".
std::string link_target(int dirfd, const std::string& name) {
  std::vector<char> buf(4096);
  ssize_t n = ::readlinkat(dirfd, name.c_str(), buf.data(), buf.size() - 1);
  return n > 0 ? std::string(buf.data(), static_cast<size_t>(n)) : std::string();
}

Status make_runroot_link(const StorageLayout& layout, const JobUser& user) {
  std::string name = link_name(layout);
  // Another storage's cleanup may remove the (then empty) directory between our mkdir and
  // symlinkat: then it is made again.
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto dir = SEALRUN_TRY(open_link_dir(layout));
    struct stat st {};
    if (::fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
      // A link left by a killed run of this same owned root may be replaced; nothing else.
      if (!S_ISLNK(st.st_mode) || link_target(dir.get(), name) != layout.run_root)
        return Error::make(
            fmt::format("podman runroot link {} exists and is not this run's; remove "
                        "it (sealrun sweep)",
                        layout.run_root_link));
      ::unlinkat(dir.get(), name.c_str(), 0);
    }
    if (::symlinkat(layout.run_root.c_str(), dir.get(), name.c_str()) == 0) {
      if (user.drop &&
          ::fchownat(dir.get(), name.c_str(), user.uid, user.gid, AT_SYMLINK_NOFOLLOW) != 0)
        return Error::from_errno(fmt::format("chown {}", layout.run_root_link));
      return ok_status();
    }
    if (errno != ENOENT)
      return Error::from_errno(
          fmt::format("symlink {} -> {}", layout.run_root_link, layout.run_root));
  }
  return Error::make(
      fmt::format("symlink {}: its directory kept disappearing", layout.run_root_link));
}

}  // namespace

// Removes the storage's runroot link (only if it points at this storage), then its directory if
// that is now empty.
void remove_runroot_link(const StorageLayout& layout, std::vector<std::string>& actions) {
  auto dir = open_at(AT_FDCWD, layout.link_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  if (!dir) return;
  std::string name = link_name(layout);
  if (link_target(dir->get(), name) != layout.run_root) return;
  if (::unlinkat(dir->get(), name.c_str(), 0) == 0)
    actions.push_back(fmt::format("removed runroot link {}", layout.run_root_link));
  else
    actions.push_back(
        fmt::format("remove runroot link {}: {}", layout.run_root_link, errno_text(errno)));
  ::rmdir(layout.link_dir.c_str());  // fails while another storage's link is in it: fine
}

// Rootless podman keeps its user namespace alive with a pause process ("catatonit -P", or podman
// itself) and records its pid in libpod's tmp dir (--tmpdir: layout.tmp_dir; without that flag,
// $XDG_RUNTIME_DIR/libpod/tmp). Every storage has its own XDG_RUNTIME_DIR, hence its own pause
// process, which would otherwise outlive the run. Then every other process still running from the
// storage (a podman or conmon a killed controller left, the watchdog) goes the same way; /proc is
// scanned for them because a controller killed early may not have learnt their pids.
void stop_storage_processes(const StorageLayout& layout, const JobUser& user,
                            const std::string& not_before, std::vector<std::string>& actions) {
  auto text = read_bounded_file(AT_FDCWD, layout.tmp_dir + "/pause.pid", 64);
  if (!text) text = read_bounded_file(AT_FDCWD, layout.runtime_dir + "/libpod/tmp/pause.pid", 64);
  // Out of our sight when the storage is on a killed controller's owned file system (it lives on
  // in the namespace of the storage's processes, containment/ownedfs/private_ns.h): read through
  // such a process's root. What it says is only a candidate: kill_storage_process() checks it.
  if (auto proc = open_at(AT_FDCWD, "/proc", O_RDONLY | O_DIRECTORY); !text && proc) {
    for (const std::string& name : list_dir_names(proc->get())) {
      pid_t pid = 0;
      auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), pid);
      if (ec != std::errc() || end != name.data() + name.size() || pid <= 1 ||
          !runs_from_storage(pid, layout, user, not_before))
        continue;
      text = read_bounded_file(AT_FDCWD, "/proc/" + name + "/root" + layout.tmp_dir + "/pause.pid",
                               64);
      if (text) break;
    }
  }
  constexpr int kStoragePasses = 8;  // listings of /proc, at most
  std::set<pid_t> seen;              // each process is killed (or reported alive after KILL) once
  if (text) {
    pid_t pid = static_cast<pid_t>(std::strtol(text->c_str(), nullptr, 10));
    if (pid > 1 && kill_storage_process(pid, "pause process", layout, user, not_before, actions))
      seen.insert(pid);
  }
  // A process of the storage may start another between the listing of /proc and its own death (a
  // podman a killed controller left, still starting its pause process): the listing is taken
  // again until one finds nothing new of the storage (bounded: each pass kills what it found).
  for (int pass = 0; pass < kStoragePasses; ++pass) {
    auto proc = open_at(AT_FDCWD, "/proc", O_RDONLY | O_DIRECTORY);
    if (!proc) return;
    bool found = false;
    for (const std::string& name : list_dir_names(proc->get())) {
      pid_t pid = 0;
      auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), pid);
      if (ec != std::errc() || end != name.data() + name.size() || pid <= 1 || pid == ::getpid() ||
          seen.count(pid) != 0)
        continue;
      if (kill_storage_process(pid, "process", layout, user, not_before, actions)) {
        seen.insert(pid);
        found = true;
      }
    }
    if (!found) return;
  }
  actions.push_back(fmt::format(
      "processes of the storage were still starting after {} passes over /proc", kStoragePasses));
}

Status prepare_storage(const StorageLayout& layout, const JobUser& user) {
  for (const std::string& dir : storage_dirs(layout)) {
    SEALRUN_TRY_CTX(make_dir_at(AT_FDCWD, dir, 0700), "podman storage");
    SEALRUN_TRY_CTX(chown_path(dir, user), "podman storage");
  }
  SEALRUN_TRY_CTX(make_runroot_link(layout, user), "podman storage");
  bool reachable = SEALRUN_TRY(job_user_can_access(user, layout, layout.run_root_link, "-w"));
  if (!reachable) {
    // Name the first directory on the way that denies the job user search permission.
    std::string blocker = layout.base;
    for (size_t at = 1; at != std::string::npos; at = layout.base.find('/', at + 1)) {
      std::string prefix = layout.base.substr(0, layout.base.find('/', at));
      auto searchable = job_user_can_access(user, layout, prefix, "-x");
      if (!searchable.ok() || !*searchable) {
        blocker = prefix;
        break;
      }
    }
    return Error::make(fmt::format(
        "podman storage {}: the job user {} cannot reach it: {} denies it search permission; "
        "rootless podman runs as {} and takes paths, so the owned root and its parents need o+x "
        "(e.g. chmod 0711 {})",
        layout.base, user.name, blocker, user.name, blocker));
  }
  return ok_status();
}

Status write_seccomp_profile(const StorageLayout& layout, const JobUser& user,
                             const std::string& profile_json) {
  auto fd = SEALRUN_TRY_CTX(
      open_at(AT_FDCWD, layout.seccomp_profile, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600),
      "seccomp profile");
  SEALRUN_TRY(write_all(fd.get(), profile_json, layout.seccomp_profile));
  if (user.drop && ::fchown(fd.get(), user.uid, user.gid) != 0)
    return Error::from_errno(fmt::format("chown {} to {}", layout.seccomp_profile, user.name));
  return ok_status();
}

Result<std::string> accessible_image_archive(const StorageLayout& layout, const JobUser& user,
                                             const std::string& archive,
                                             std::vector<std::string>& actions) {
  bool readable = SEALRUN_TRY(job_user_can_access(user, layout, archive, "-r"));
  if (readable) return archive;
  if (!user.drop)
    return Error::make(fmt::format("image archive {} is not readable; make it readable", archive));
  std::error_code ec;
  fs::copy_file(archive, layout.image_copy, fs::copy_options::none, ec);
  if (ec)
    return Error::with_errno(
        ec.value(), fmt::format("copy image archive {} to {}", archive, layout.image_copy));
  SEALRUN_TRY(chown_path(layout.image_copy, user));
  ::chmod(layout.image_copy.c_str(), 0400);
  actions.push_back(fmt::format("copied image archive {} to {} (unreadable for {})", archive,
                                layout.image_copy, user.name));
  return layout.image_copy;
}

Status ensure_runroot_link(const StorageLayout& layout, const JobUser& user) {
  return make_runroot_link(layout, user);
}

Result<std::string> image_source(const JobUser& user, const StorageLayout& layout,
                                 const std::string& archive, int64_t timeout_ms) {
  // podman's transport references are "transport:path[:reference]".
  if (archive.find(':') != std::string::npos)
    return Error::make(fmt::format(
        "{} contains ':', which podman's image reference syntax cannot carry; move it", archive));
  std::string tar = SEALRUN_TRY(find_program("tar"));
  auto listing = SEALRUN_TRY(
      run_capture(as_job_user(user, layout, {tar, "-tf", archive}), timeout_ms, 1024 * 1024));
  if (listing.timed_out || !listing.status.success())
    return Error::make(fmt::format("tar -tf {}: {}: {}", archive,
                                   listing.timed_out ? "timed out" : listing.status.describe(),
                                   last_stderr_line(listing.err)));
  bool oci = false;
  for (size_t at = 0; at < listing.out.size() && !oci;) {
    size_t end = listing.out.find('\n', at);
    std::string_view member(listing.out.data() + at,
                            (end == std::string::npos ? listing.out.size() : end) - at);
    oci = member == "index.json" || member == "./index.json";
    at = end == std::string::npos ? listing.out.size() : end + 1;
  }
  if (!oci) return "docker-archive:" + archive;
  SEALRUN_TRY(make_dir_at(AT_FDCWD, layout.image_dir, 0700));
  SEALRUN_TRY(chown_path(layout.image_dir, user));
  // As the job user, into its own directory: a hostile member can reach nothing else, and GNU tar
  // refuses ".." members and strips leading "/".
  auto unpacked =
      SEALRUN_TRY(run_capture(as_job_user(user, layout,
                                          {tar, "--no-same-owner", "--no-same-permissions", "-xf",
                                           archive, "-C", layout.image_dir}),
                              timeout_ms, 64 * 1024));
  if (unpacked.timed_out || !unpacked.status.success())
    return Error::make(fmt::format("unpack {}: {}: {}", archive,
                                   unpacked.timed_out ? "timed out" : unpacked.status.describe(),
                                   last_stderr_line(unpacked.err)));
  return "oci:" + layout.image_dir.substr(layout.base.size() + 1);
}

Result<std::vector<MountSpec>> prepare_mounts(const ContainmentSpec& spec,
                                              const StorageLayout& layout, const JobUser& user,
                                              std::vector<std::string>& actions) {
  std::vector<MountSpec> out;
  int staged = 0;
  for (const MountSpec& m : spec.mounts) {
    // An unpacked image's entries are bwrap's way to the image; podman runs the image itself.
    if (m.kind == ViewKind::kImage) continue;
    bool writable = m.access == MountSpec::Access::kWritable;
    MountFacts f;
    f.accessible_to_job_user = SEALRUN_TRY(job_user_can_use_tree(user, layout, m.source, writable));
    f.under_owned_root = path_is_below(m.source, spec.owned_root);
    f.empty_directory = is_empty_directory(m.source);
    f.controller_is_root = user.drop;
    MountSpec use = m;
    switch (decide_mount_action(m, f)) {
      case MountAction::kBindAsIs:
        break;
      case MountAction::kStageCopy: {
        use.source = fmt::format("{}/{}", layout.stage_dir, staged++);
        SEALRUN_TRY_CTX(run_as_controller({"cp", "-a", "--", m.source, use.source}, 600 * 1000),
                        fmt::format("stage mount {}", m.target));
        SEALRUN_TRY_CTX(
            run_as_controller(
                {"chown", "-R", "-h", fmt::format("{}:{}", user.uid, user.gid), "--", use.source},
                600 * 1000),
            fmt::format("stage mount {}", m.target));
        // The container's root is the job user: owner bits decide, so make them readable.
        SEALRUN_TRY_CTX(run_as_controller({"chmod", "-R", "u+rX", "--", use.source}, 600 * 1000),
                        fmt::format("stage mount {}", m.target));
        actions.push_back(fmt::format("staged {} (unreadable for {}) as {} for {}", m.source,
                                      user.name, use.source, m.target));
        break;
      }
      case MountAction::kChownToJobUser:
        SEALRUN_TRY_CTX(
            run_as_controller(
                {"chown", "-R", "-h", fmt::format("{}:{}", user.uid, user.gid), "--", m.source},
                600 * 1000),
            fmt::format("writable mount {}", m.target));
        actions.push_back(fmt::format("gave writable mount source {} to {}", m.source, user.name));
        break;
      case MountAction::kRefuse:
        return Error::make(fmt::format(
            "mount {} -> {}: the job user {} cannot {} it, and sealrun will only {} what it "
            "owns; make it accessible to {}",
            m.source, m.target, user.name, writable ? "write" : "read",
            user.drop ? "hand over a directory below the run's owned root or an empty one,"
                      : "(not running as root) change nothing,",
            user.name));
    }
    out.push_back(std::move(use));
  }
  return out;
}

Status remove_storage(const StorageLayout& layout, const JobUser& user, const HostFacts& facts,
                      const std::string& not_before, std::vector<std::string>& actions) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(layout.base, ec)) &&
      !fs::is_symlink(fs::symlink_status(layout.run_root_link, ec))) {
    // Out of sight, not necessarily gone: on the owned file system of a killed controller, kept
    // alive by a process of the storage in a namespace of its own (its pause process copied the
    // controller's private mount namespace, containment/ownedfs/private_ns.h). Those processes
    // are found by their XDG_RUNTIME_DIR all the same; the file system goes with the last of them.
    stop_storage_processes(layout, user, not_before, actions);
    actions.push_back(fmt::format("storage {}: already absent", layout.base));
    return ok_status();
  }
  // Container layers hold files owned by subordinate ids: removable from inside the job user's
  // user namespace; as root, plain removal below would also do, but not for a non-root caller.
  auto unshared = run_as_job_user(
      user, layout, unshare_rm_argv(layout, facts, {layout.graph_root, layout.run_root}),
      120 * 1000);
  actions.push_back(
      unshared ? fmt::format("podman unshare rm -rf {} {}: ok", layout.graph_root, layout.run_root)
               : fmt::format("podman unshare rm -rf: {}", unshared.error().message()));
  stop_storage_processes(layout, user, not_before, actions);
  remove_runroot_link(layout, actions);
  fs::remove_all(layout.base, ec);
  if (ec) {
    actions.push_back(fmt::format("remove {}: {}", layout.base, ec.message()));
    return Error::with_errno(ec.value(), fmt::format("remove podman storage {}", layout.base));
  }
  actions.push_back(fmt::format("removed {}", layout.base));
  return ok_status();
}

std::optional<std::string> owned_root_of_run_root(const std::string& run_root) {
  // storage_layout(): <owned root>/podman/runroot.
  static constexpr std::string_view kTail = "/podman/runroot";
  if (run_root.size() <= kTail.size() ||
      run_root.compare(run_root.size() - kTail.size(), kTail.size(), kTail) != 0)
    return std::nullopt;
  return run_root.substr(0, run_root.size() - kTail.size());
}

std::vector<std::string> sweep_dangling_links(const std::string& link_dir) {
  std::vector<std::string> actions;
  auto dir = open_at(AT_FDCWD, link_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  if (!dir) return actions;
  auto st = fstat_fd(dir->get(), link_dir);
  if (!st || !check_trusted_dir(*st, link_dir, false)) {
    actions.push_back(fmt::format("{}: not a directory sealrun can trust; left alone", link_dir));
    return actions;
  }
  for (const std::string& name : list_dir_names(dir->get())) {
    // Only names podman_argv makes: 16 hex digits.
    if (name.size() != 16 || name.find_first_not_of("0123456789abcdef") != std::string::npos)
      continue;
    std::string target = link_target(dir->get(), name);
    struct stat tst {};
    if (target.empty() || ::lstat(target.c_str(), &tst) == 0) continue;  // in use, or not a link
    // A live run's storage is on its owned file system, mounted in its controller's own mount
    // namespace (ownedfs/private_ns.h): from here the target is missing but the owned root (the
    // mount point) is still there. Only a link whose owned root is gone too is dangling — removing
    // a live run's link made its podman recreate the path itself and fail (permission denied).
    if (auto owned = owned_root_of_run_root(target); owned && ::lstat(owned->c_str(), &tst) == 0)
      continue;
    if (::unlinkat(dir->get(), name.c_str(), 0) == 0)
      actions.push_back(fmt::format("removed runroot link {}/{} (its storage {} is gone)", link_dir,
                                    name, target));
  }
  ::rmdir(link_dir.c_str());  // fails while a live storage's link is in it: fine
  return actions;
}

}  // namespace sealrun::podman
