// SPDX-License-Identifier: Apache-2.0
// remove_owned_fs() and sweep_owned_fs(): see ownedfs.h. Both run the same teardown of one run's
// owned file system, which proves ownership before touching anything:
//
//   the image STATE/ownedfs/<id>.img (a regular file of ours) → its device and inode;
//   the mount at STATE/owned/<id> is touched only if its device is a loop device bound to exactly
//   that inode; a loop device is detached only if bound to that inode;
//   the image is unlinked only once no loop device holds it, the record only once nothing is left.
#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <thread>

#include "containment/ownedfs/loop_device.h"
#include "containment/ownedfs/mounts.h"
#include "containment/ownedfs/ownedfs.h"
#include "containment/ownedfs/record.h"
#include "containment/ownedfs/template.h"
#include "core/atomic_write.h"
#include "core/bounded_file.h"
#include "core/proc.h"
#include "core/syscall.h"
#include "core/unique_fd.h"

namespace sealrun::ownedfs {
namespace {

constexpr int64_t kPollMs = 10;
constexpr int64_t kReleaseWaitMs = 1000;  // the kernel's autoclear after the last unmount

struct Target {
  int dirfd = -1;
  std::string id;
  std::string mount_point;
  std::string loop_device;  // recorded; may be empty
};

struct Identity {
  dev_t dev = 0;
  ino_t ino = 0;
};

bool bound_to(const std::optional<LoopBacking>& b, const Identity& image) {
  return b && b->dev == image.dev && b->ino == image.ino;
}

// The ext4 (and XFS, f2fs) shutdown ioctl and its "drop everything, write nothing" flag
// (EXT4_IOC_SHUTDOWN, EXT4_GOING_FLAGS_NOLOGFLUSH; not in the uapi headers of older kernels).
constexpr unsigned long kIocShutdown = _IOR('X', 125, uint32_t);
constexpr uint32_t kShutdownNoFlush = 0x2;

// The run is over and nothing in its file system is kept (logs were copied out before), so its
// dirty metadata is dropped instead of being written through the loop device into an image that
// is about to be unlinked: unmounting then costs no I/O. Only the file system `device` is touched.
bool discard_contents(const std::string& mount_point, dev_t device) {
  UniqueFd fd(::open(mount_point.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || st.st_dev != device) return false;
  uint32_t flags = kShutdownNoFlush;
  return ::ioctl(fd.get(), kIocShutdown, &flags) == 0;
}

// Unmounts `mount_point` (ours: checked by the caller), retrying while busy; then, as the last
// resort, names the holders and detaches lazily. Returns whether the file system is gone.
bool unmount(const std::string& mount_point, dev_t device, int64_t busy_wait_ms, const Host& host,
             std::vector<Step>& steps) {
  Step s{"unmount " + mount_point, "", false};
  std::string discarded = discard_contents(mount_point, device) ? "contents discarded, " : "";
  int64_t deadline = monotonic_ms() + busy_wait_ms;
  for (;;) {
    if (::umount2(mount_point.c_str(), UMOUNT_NOFOLLOW) == 0) {
      s.outcome = discarded + "unmounted";
      steps.push_back(s);
      return true;
    }
    if (errno != EBUSY || monotonic_ms() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(kPollMs));
  }
  if (errno != EBUSY) {
    s.outcome = fmt::format("failed: {}", errno_text(errno));
    s.left = true;
    steps.push_back(s);
    return false;
  }
  auto holders = mount_holders(host.proc_dir, device);
  std::string who = holders.empty() ? "no process found holding it" : "";
  for (const auto& h : holders) who += (who.empty() ? "" : ", ") + h;
  if (::umount2(mount_point.c_str(), UMOUNT_NOFOLLOW | MNT_DETACH) == 0) {
    s.outcome = fmt::format(
        "busy for {} ms ({}): detached lazily as a last resort; the file system and its loop "
        "device live on until those processes let go",
        busy_wait_ms, who);
  } else {
    s.outcome = fmt::format("busy ({}), and a lazy detach failed too: {}", who, errno_text(errno));
  }
  s.left = true;
  steps.push_back(s);
  return false;
}

// Waits for autoclear to release `loop` from the image, detaching it ourselves if it does not.
bool release_loop(const std::string& loop, const Identity& image, bool expect_busy,
                  const Host& host, std::vector<Step>& steps) {
  Step s{"loop device " + loop, "", false};
  int64_t deadline = monotonic_ms() + (expect_busy ? 0 : kReleaseWaitMs);
  for (;;) {
    auto b = loop_backing(loop);
    if (!b) {
      s.outcome = "cannot be read: " + b.error().message();
      s.left = true;
      break;
    }
    if (!bound_to(*b, image)) {
      s.outcome = "released";
      break;
    }
    if (monotonic_ms() >= deadline) {
      // Still bound: LOOP_CLR_FD detaches at once when nothing uses the device, or marks it to go
      // at its last close.
      auto st = detach_loop(loop);
      auto again = loop_backing(loop);
      if (st && again && !bound_to(*again, image)) {
        s.outcome = "detached (LOOP_CLR_FD)";
      } else {
        s.outcome = st ? "still bound to the image: in use (it is released when its user goes)"
                       : "still bound to the image; detach failed: " + st.error().message();
        std::vector<std::string> holders;
        struct stat ls {};
        if (::stat(loop.c_str(), &ls) == 0) holders = mount_holders(host.proc_dir, ls.st_rdev);
        for (size_t i = 0; i < holders.size(); ++i)
          s.outcome += (i == 0 ? "; held by " : ", ") + holders[i];
        // Held only as a copy in other mount namespaces (a process that unshared its mounts while
        // this one existed: another run's podman pause process, a service with a private /tmp):
        // nothing can reach it through ours, its contents were dropped (discard_contents), and
        // autoclear releases the device and the image's blocks when the last such process exits.
        bool elsewhere_only = expect_busy == false && !holders.empty();
        for (const auto& h : holders)
          elsewhere_only = elsewhere_only && h.find(kOtherNamespaceHolder) != std::string::npos;
        if (elsewhere_only) {
          s.outcome = "gone from this mount namespace; still mounted in another one (" +
                      holders.front() + (holders.size() > 1 ? ", ..." : "") +
                      "): the kernel releases it when that process exits (autoclear)";
          break;
        }
        s.left = true;
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(kPollMs));
  }
  steps.push_back(s);
  return !s.left;
}

std::vector<Step> tear_down(const Target& t, int64_t busy_wait_ms, const Host& host) {
  std::vector<Step> steps;
  std::string img = image_name(t.id);
  struct stat ist {};
  std::optional<Identity> image;
  if (::fstatat(t.dirfd, img.c_str(), &ist, AT_SYMLINK_NOFOLLOW) == 0) {
    if (!S_ISREG(ist.st_mode) || ist.st_uid != ::geteuid()) {
      steps.push_back({"image " + img, "refused: not a regular file of ours", true});
      return steps;
    }
    image = Identity{ist.st_dev, ist.st_ino};
  } else if (errno != ENOENT) {
    steps.push_back({"image " + img, fmt::format("cannot be read: {}", errno_text(errno)), true});
    return steps;
  }

  bool gone = true;  // nothing of this file system is left mounted or attached
  std::string loop = t.loop_device;
  auto mounted = mount_at(host.proc_dir, t.mount_point);
  if (!mounted) {
    steps.push_back(
        {"mount " + t.mount_point, "mount table unreadable: " + mounted.error().message(), true});
    return steps;
  }
  if (*mounted) {
    auto name = loop_name_of(host.sys_dir, (*mounted)->device);
    std::optional<LoopBacking> backing;
    if (name) {
      auto b = loop_backing(host.dev_dir + "/" + *name);
      if (b) backing = *b;
    }
    if (!image || !name || !bound_to(backing, *image)) {
      steps.push_back({"mount " + t.mount_point,
                       fmt::format("refused: what is mounted there ({} {}) is not this run's image",
                                   (*mounted)->fstype, (*mounted)->source),
                       true});
      return steps;
    }
    loop = host.dev_dir + "/" + *name;
    gone = unmount(t.mount_point, (*mounted)->device, busy_wait_ms, host, steps);
  } else {
    steps.push_back({"unmount " + t.mount_point, "not mounted", false});
  }

  if (image && !loop.empty()) gone = release_loop(loop, *image, !gone, host, steps) && gone;
  if (image) {
    if (gone) {
      bool ok = ::unlinkat(t.dirfd, img.c_str(), 0) == 0 || errno == ENOENT;
      steps.push_back({"image " + img,
                       ok ? "removed" : fmt::format("remove failed: {}", errno_text(errno)), !ok});
      gone = ok;
    } else {
      steps.push_back(
          {"image " + img, "kept while in use (`sealrun sweep` removes it later)", true});
    }
  } else {
    steps.push_back({"image " + img, "already gone", false});
  }
  if (gone && t.id.find('+') != std::string::npos) {
    // A result space's mount point (STATE/owned/<id>+out) was made for the mount alone: once
    // nothing is mounted there it goes too (only when empty: rmdir never removes content).
    bool ok = ::rmdir(t.mount_point.c_str()) == 0 || errno == ENOENT;
    steps.push_back({"mount point " + t.mount_point,
                     ok ? "removed" : fmt::format("remove failed: {}", errno_text(errno)), !ok});
    gone = ok;
  }
  if (gone) {
    auto st = remove_record(t.dirfd, t.id);
    steps.push_back({"record " + record_name(t.id),
                     st ? "removed" : "remove failed: " + st.error().message(), !st.ok()});
  } else {
    steps.push_back(
        {"record " + record_name(t.id), "kept: something of this file system is left", true});
  }
  return steps;
}

// What names an owned file system without a record: the loop devices bound to an image of this
// state directory (by the backing file's path in sysfs, "... (deleted)" when it was unlinked), and
// the mounts directly under STATE/owned. A run's record is written before its image exists and
// removed after everything else is gone, so no live controller's file system lacks one: these are
// what a lost record (or a controller killed at the wrong moment by an older sealrun) left.
struct Orphan {
  std::vector<std::string> loops;  // /dev/loopN bound to STATE/ownedfs/<id>.img
  bool mounted = false;            // something is mounted at STATE/owned/<id>
};

std::map<std::string, Orphan> find_orphans(const std::string& state, const Host& host,
                                           std::vector<Step>& steps) {
  std::map<std::string, Orphan> out;
  const std::string images = state + "/ownedfs/";
  std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir((host.sys_dir + "/block").c_str()), &::closedir);
  while (d) {
    struct dirent* e = ::readdir(d.get());
    if (e == nullptr) break;
    std::string name = e->d_name;
    if (name.rfind("loop", 0) != 0) continue;
    auto text =
        read_bounded_file(AT_FDCWD, host.sys_dir + "/block/" + name + "/loop/backing_file", 4096);
    if (!text) continue;  // not bound
    std::string backing = *text;
    while (!backing.empty() && backing.back() == '\n') backing.pop_back();
    const std::string deleted = " (deleted)";
    if (backing.size() > deleted.size() &&
        backing.compare(backing.size() - deleted.size(), deleted.size(), deleted) == 0)
      backing.resize(backing.size() - deleted.size());
    if (backing.compare(0, images.size(), images) != 0 || backing.size() <= images.size() + 4 ||
        backing.compare(backing.size() - 4, 4, ".img") != 0)
      continue;
    std::string id = backing.substr(images.size(), backing.size() - images.size() - 4);
    if (is_valid_fs_id(id)) out[id].loops.push_back(host.dev_dir + "/" + name);
  }
  auto mounts = mounts_below(host.proc_dir, state + "/owned");
  if (!mounts) {
    steps.push_back({"mounts under " + state + "/owned",
                     "mount table unreadable: " + mounts.error().message(), true});
    return out;
  }
  for (const auto& [point, entry] : *mounts) {
    std::string id = point.substr(state.size() + 7);  // after "/owned/"
    if (is_valid_fs_id(id)) out[id].mounted = true;
  }
  return out;
}

// An owned file system with no record whose image is gone too (unlinked while a loop device still
// held it): proven ours by the loop device itself — its backing file is STATE/ownedfs/<id>.img
// (sysfs) and it was attached under that name (LOOP_GET_STATUS64's file name, create.cc) — and
// then unmounted and detached like any other.
void tear_down_imageless(const std::string& state, const std::string& id, const Orphan& o,
                         const Host& host, std::vector<Step>& steps) {
  const std::string mount_point = state + "/owned/" + id;
  std::vector<std::string> loops = o.loops;
  // What each loop device is bound to, before the unmount lets autoclear release it.
  std::vector<std::pair<std::string, Identity>> bound;
  for (const auto& loop : loops)
    if (auto b = loop_backing(loop); b && *b)
      bound.emplace_back(loop, Identity{static_cast<dev_t>((*b)->dev), (*b)->ino});
  bool gone = true;
  if (o.mounted) {
    auto m = mount_at(host.proc_dir, mount_point);
    std::optional<std::string> name;
    if (m && *m) name = loop_name_of(host.sys_dir, (*m)->device);
    std::string loop = name ? host.dev_dir + "/" + *name : "";
    if (loop.empty() || std::find(loops.begin(), loops.end(), loop) == loops.end()) {
      steps.push_back({"mount " + mount_point,
                       "refused: no record names it, and what is mounted there is not on a loop "
                       "device bound to " +
                           image_name(id),
                       true});
      return;
    }
    gone = unmount(mount_point, (*m)->device, 1000, host, steps);
  }
  for (const auto& [loop, identity] : bound)
    gone = release_loop(loop, identity, !gone, host, steps) && gone;
  if (gone && id.find('+') != std::string::npos) {
    bool ok = ::rmdir(mount_point.c_str()) == 0 || errno == ENOENT;
    steps.push_back({"mount point " + mount_point,
                     ok ? "removed" : fmt::format("remove failed: {}", errno_text(errno)), !ok});
  }
}

// Owned file systems of this state directory that no record names (`recorded`: the ids that have
// one, read or not): mounted under STATE/owned, or on a loop device bound to one of its images.
void sweep_orphans(int dirfd, const std::string& state, const std::set<std::string>& recorded,
                   const std::optional<std::string>& only, const Host& host,
                   std::vector<Step>& steps) {
  for (const auto& [id, o] : find_orphans(state, host, steps)) {
    if (recorded.count(id) != 0 || (only && id != *only)) continue;
    steps.push_back({"owned file system " + id,
                     fmt::format("no record names it, yet it is {}",
                                 o.mounted ? "mounted" : "on a loop device"),
                     false});
    struct stat st {};
    if (::fstatat(dirfd, image_name(id).c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
      std::error_code ec;
      std::string mount_point = std::filesystem::weakly_canonical(state + "/owned/" + id, ec);
      std::string loop = o.loops.empty() ? "" : o.loops.front();
      for (auto& s : tear_down({dirfd, id, mount_point, loop}, 1000, host)) steps.push_back(s);
    } else {
      tear_down_imageless(state, id, o, host, steps);
    }
  }
}

std::string state_of(const std::string& image_path) {
  // <state>/ownedfs/<id>.img → <state>
  return std::filesystem::path(image_path).parent_path().parent_path().string();
}

}  // namespace

std::vector<Step> remove_owned_fs(const OwnedFs& fs, int64_t busy_wait_ms, const Host& host) {
  auto dir = open_ownedfs_dir(state_of(fs.image_path), false);
  if (!dir) return {{"owned file system " + fs.mount_point, dir.error().message(), true}};
  return tear_down({dir->get(), fs.id, fs.mount_point, fs.loop_device}, busy_wait_ms, host);
}

namespace {

// One record of STATE/ownedfs (`name`, in `dirfd`): its file system torn down when its controller
// is dead and the record names this state directory's paths. Returns the run id it names, if any.
std::optional<std::string> sweep_record(int dirfd, const std::string& state, const std::string& n,
                                        const Host& host, std::vector<Step>& steps) {
  std::string what = "owned file system record " + n;
  auto r = read_record(dirfd, n);
  if (!r) {
    steps.push_back({what, r.error().message() + "; kept for a person to inspect", true});
    return std::nullopt;
  }
  if (n != record_name(r->id)) {
    steps.push_back({what, fmt::format("refused: it names run {}", r->id), true});
    return r->id;
  }
  if (process_is_alive(r->controller_pid, r->controller_start, host.proc_dir)) {
    steps.push_back(
        {what, fmt::format("controller pid {} is alive: not touched", r->controller_pid), false});
    return r->id;
  }
  // Paths come from the state directory and the id, never from the record alone.
  std::error_code ec;
  std::string mount_point = std::filesystem::weakly_canonical(state + "/owned/" + r->id, ec);
  if (r->mount_point != mount_point || r->image != state + "/ownedfs/" + image_name(r->id)) {
    steps.push_back({what,
                     fmt::format("refused: it names {} and {}, not this state directory's",
                                 r->mount_point, r->image),
                     true});
    return r->id;
  }
  for (auto& s : tear_down({dirfd, r->id, mount_point, r->loop_device}, 1000, host))
    steps.push_back(std::move(s));
  return r->id;
}

// STATE/ownedfs, canonical and opened; nullopt (with nothing reported) when it does not exist.
std::optional<std::pair<std::string, Result<UniqueFd>>> ownedfs_dir(const std::string& state_dir) {
  std::error_code ec;
  std::string state = std::filesystem::canonical(state_dir, ec).string();
  if (ec) return std::nullopt;  // no state directory: nothing was ever made here
  struct stat st {};
  if (::lstat((state + "/ownedfs").c_str(), &st) != 0 && errno == ENOENT) return std::nullopt;
  return std::make_pair(state, open_ownedfs_dir(state, false));
}

}  // namespace

std::vector<Step> sweep_owned_fs_of_run(const std::string& state_dir, const std::string& id,
                                        const Host& host) {
  std::vector<Step> steps;
  auto dir = ownedfs_dir(state_dir);
  if (!dir) return steps;
  auto& [state, fd] = *dir;
  if (!fd) return {{"owned file systems " + state + "/ownedfs", fd.error().message(), true}};
  struct stat st {};
  bool has_record = ::fstatat(fd->get(), record_name(id).c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
  if (has_record && read_record(fd->get(), record_name(id))) {
    sweep_record(fd->get(), state, record_name(id), host, steps);
    return steps;
  }
  if (::fstatat(fd->get(), image_name(id).c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (has_record) {
      sweep_record(fd->get(), state, record_name(id), host, steps);  // reported
    } else {
      // Neither record nor image, yet perhaps still mounted or on a loop device.
      sweep_orphans(fd->get(), state, {}, id, host, steps);
    }
    return steps;
  }
  // The image without a readable record: what a power failure leaves of a record never fsync'd.
  steps.push_back({"owned file system record " + record_name(id),
                   has_record ? "unreadable; the run's grant record vouches for its image"
                              : "missing; the run's grant record vouches for its image",
                   false});
  std::error_code ec;
  std::string mount_point = std::filesystem::weakly_canonical(state + "/owned/" + id, ec);
  for (auto& s : tear_down({fd->get(), id, mount_point, ""}, 1000, host)) steps.push_back(s);
  return steps;
}

namespace {

// Temporaries of template writes (template.h) whose writer is gone: write_file_atomic names them
// ".<name>.tmp-<pid>-<random>". The templates themselves are not a run's and stay.
void sweep_template_temporaries(int ownedfs_dirfd, const Host& host, std::vector<Step>& steps) {
  auto dir = open_at(ownedfs_dirfd, kTemplateDir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  if (!dir) return;
  auto names = list_names(dir->get());
  if (!names) return;
  for (const auto& n : *names) {
    const std::optional<pid_t> writer = atomic_write_temporary_writer(n);
    if (!writer) continue;
    if (process_exists(*writer, host.proc_dir)) continue;  // its writer may be alive
    bool ok = ::unlinkat(dir->get(), n.c_str(), 0) == 0;
    steps.push_back(
        {"template temporary " + n, ok ? "removed (its writer is gone)" : "remove failed", !ok});
  }
}

}  // namespace

std::vector<Step> sweep_owned_fs(const std::string& state_dir, const Host& host) {
  std::vector<Step> steps;
  auto dir = ownedfs_dir(state_dir);
  if (!dir) return steps;
  auto& [state, fd] = *dir;
  if (!fd) return {{"owned file systems " + state + "/ownedfs", fd.error().message(), true}};
  auto names = list_names(fd->get());
  if (!names) return {{"owned file systems " + state + "/ownedfs", names.error().message(), true}};
  std::vector<std::string> recorded_images;
  std::set<std::string> recorded;
  for (const auto& n : *names) {
    if (n.size() <= 5 || n.compare(n.size() - 5, 5, ".json") != 0 || n[0] == '.') continue;
    recorded.insert(n.substr(0, n.size() - 5));
    if (auto id = sweep_record(fd->get(), state, n, host, steps))
      recorded_images.push_back(image_name(*id));
  }
  // Mounts and loop devices no record names; an image of theirs is removed with them.
  size_t before = steps.size();
  sweep_orphans(fd->get(), state, recorded, std::nullopt, host, steps);
  if (steps.size() != before) {
    auto again = list_names(fd->get());
    if (again) names = std::move(again);
  }
  for (const auto& n : *names) {
    bool image = n.size() > 4 && n.compare(n.size() - 4, 4, ".img") == 0;
    bool tmp = n[0] == '.' && n.size() > 9 && n.compare(n.size() - 9, 9, ".json.tmp") == 0;
    if (tmp) {  // an interrupted record write: the directory is ours alone, so is the file
      bool ok = ::unlinkat(fd->get(), n.c_str(), 0) == 0;
      steps.push_back({"temporary " + n, ok ? "removed" : "remove failed", !ok});
    } else if (image && std::find(recorded_images.begin(), recorded_images.end(), n) ==
                            recorded_images.end()) {
      steps.push_back({"image " + n, "no record names it: not touched", true});
    }
  }
  sweep_template_temporaries(fd->get(), host, steps);
  return steps;
}

}  // namespace sealrun::ownedfs
