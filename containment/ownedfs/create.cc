// SPDX-License-Identifier: Apache-2.0
// create_owned_fs(): see ownedfs.h. The order is what makes it safe to kill at any point:
//
//   record → image (O_EXCL, sparse) → the shape's template or mkfs.ext4 → loop device
//   (autoclear) → record with the loop device → fsopen/fsconfig/fsmount: a mount that is attached
//   nowhere yet → prepare its root through the mount's descriptor (marker, filler inodes, owner,
//   mode) → move_mount onto the mount point.
//
// Killed before move_mount, the detached mount dies with the controller's descriptors and the
// kernel then detaches the loop device itself (autoclear): only the image and its record are left,
// which sweep removes. Killed after, the mount is left too, and sweep finds it through the record.
//
// The record is not fsync'd. A killed controller leaves it complete (the page cache outlives the
// process). A power failure may lose it, but the run's grant record was made durable before this
// file system was begun and names the run, so `sweep` still finds the image
// (sweep_owned_fs_of_run); the loop device and the mount, the record's other contents, do not
// outlive a reboot.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <filesystem>

#include "containment/ownedfs/loop_device.h"
#include "containment/ownedfs/mounts.h"
#include "containment/ownedfs/ownedfs.h"
#include "containment/ownedfs/record.h"
#include "containment/ownedfs/shape.h"
#include "containment/ownedfs/template.h"
#include "core/proc.h"
#include "core/process.h"
#include "core/run_id.h"
#include "core/syscall.h"

namespace sealrun::ownedfs {
namespace {

constexpr int64_t kMkfsTimeoutMs = 60'000;

Status fs_config(int fsfd, unsigned cmd, const char* key, const char* value) {
  if (::fsconfig(fsfd, cmd, key, value, 0) == 0) return ok_status();
  int err = errno;
  return Error::with_errno(
      err, fmt::format("fsconfig {}{}", key ? key : "create", fs_context_messages(fsfd)));
}

Status run_mkfs(const std::string& mkfs, const std::string& image, uint64_t inodes) {
  SpawnOptions o;
  o.argv = mkfs_argv(mkfs, image, inodes);
  o.env = std::vector<std::string>{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"};
  auto r = SEALRUN_TRY(run_capture(o, kMkfsTimeoutMs, 64 * 1024));
  if (r.timed_out) return Error::make(fmt::format("{} did not finish within 60 s", mkfs));
  if (!r.status.success())
    return Error::make(fmt::format("{} failed ({}): {}", mkfs, r.status.describe(), r.err));
  return ok_status();
}

// Puts a new ext4 file system into the image (new, sparse, sized): the shape's template when there
// is a usable one (template.h), else mkfs.ext4, whose fresh output then becomes the template.
Status format_image(int dirfd, const std::string& mkfs, const std::string& image_path, int image_fd,
                    uint64_t size_bytes, uint64_t inodes, std::string* made_by) {
  auto argv = mkfs_argv(mkfs, image_path, inodes);
  auto key = template_key(mkfs, argv, size_bytes);
  std::string why;
  if (key) {
    auto from = write_from_template(dirfd, *key, image_fd, size_bytes);
    if (from) {
      *made_by = "template " + *key;
      return ok_status();
    }
    why = from.error().message();
    // Nothing of a failed copy may stay for mkfs to leave in place (it does not zero what it
    // initialises lazily): the image is emptied and sized again.
    if (::ftruncate(image_fd, 0) != 0 || ::ftruncate(image_fd, static_cast<off_t>(size_bytes)) != 0)
      return Error::from_errno("empty the image again after a failed template copy");
  } else {
    why = key.error().message();
  }
  SEALRUN_TRY(run_mkfs(mkfs, image_path, inodes));
  std::string saved;
  if (key) {  // still never attached: mkfs's output alone, no run's data
    auto st = save_template(dirfd, *key, image_fd, size_bytes);
    saved =
        st ? "; saved as template " + *key : "; not saved as a template: " + st.error().message();
  }
  *made_by = "mkfs.ext4 (no template: " + why + saved + ")";
  return ok_status();
}

// Fills the inodes mkfs rounded up (it allots whole inode-table blocks per block group) so that the
// owned space holds exactly `inodes`: a root-only directory of empty files the job never sees.
Status fill_spare_inodes(int root_fd, uint64_t inodes, uint64_t visible, uint64_t* reserved) {
  struct statfs fs {};
  if (::fstatfs(root_fd, &fs) != 0) return Error::from_errno("statfs the new file system");
  uint64_t used = fs.f_files - fs.f_ffree;
  uint64_t reserved_now = used - visible;
  uint64_t excess = fs.f_files - reserved_now - inodes;
  if (fs.f_files < reserved_now + inodes)
    return Error::make(fmt::format("mkfs made {} inodes, fewer than the {} asked for", fs.f_files,
                                   inodes + reserved_now));
  if (excess > 0) {
    if (::mkdirat(root_fd, ".sealrun-spare-inodes", 0700) != 0)
      return Error::from_errno("mkdir .sealrun-spare-inodes");
    auto dir = SEALRUN_TRY(open_at(root_fd, ".sealrun-spare-inodes", O_RDONLY | O_DIRECTORY));
    for (uint64_t i = 1; i < excess; ++i)
      if (::mknodat(dir.get(), std::to_string(i).c_str(), S_IFREG | 0600, 0) != 0)
        return Error::from_errno("fill spare inodes");
  }
  *reserved = reserved_now + excess;
  return ok_status();
}

// What has been made so far, undone in reverse on failure.
struct Progress {
  int dirfd = -1;
  std::string id;
  bool record = false;
  bool image = false;
  std::string mounted_at;

  Error undo(Error e) {
    std::string problems;
    if (!mounted_at.empty() && ::umount2(mounted_at.c_str(), UMOUNT_NOFOLLOW) != 0)
      problems += fmt::format("; unmount {} failed: {}", mounted_at, errno_text(errno));
    if (image && ::unlinkat(dirfd, image_name(id).c_str(), 0) != 0)
      problems += fmt::format("; remove {} failed: {}", image_name(id), errno_text(errno));
    if (record && problems.empty())
      if (auto st = remove_record(dirfd, id); !st) problems += "; " + st.error().message();
    if (!problems.empty())
      e.context(fmt::format("(undoing it left something behind{}; run `sealrun sweep`)", problems));
    return e;
  }
};

}  // namespace

Result<OwnedFs> create_owned_fs(const OwnedFsSpec& spec) {
  int64_t start = monotonic_ms();
  if (!is_valid_fs_id(spec.id))
    return Error::make(fmt::format("owned file system: run id '{}' is not valid", spec.id));
  if (auto a = probe_ownedfs(spec.host); !a.available)
    return Error::make("owned file system unavailable: " + a.why);
  if (auto why = unfit_shape(spec.size_bytes, spec.inodes); !why.empty())
    return Error::make("owned file system: " + why);
  std::string mkfs = SEALRUN_TRY_CTX(find_mkfs(spec.host), "owned file system");
  std::error_code ec;
  std::string state = std::filesystem::canonical(spec.state_dir, ec).string();
  if (ec)
    return Error::with_errno(ec.value(), "owned file system: state directory " + spec.state_dir);
  std::string mount_point = std::filesystem::canonical(spec.mount_point, ec).string();
  if (ec)
    return Error::with_errno(ec.value(), "owned file system: mount point " + spec.mount_point);
  auto target = SEALRUN_TRY_CTX(open_at(AT_FDCWD, mount_point, O_PATH | O_DIRECTORY | O_NOFOLLOW),
                                "owned file system: mount point");

  OwnedFs fs;
  fs.id = spec.id;
  fs.mount_point = mount_point;
  fs.image_path = state + "/ownedfs/" + image_name(spec.id);
  fs.record_path = state + "/ownedfs/" + record_name(spec.id);
  fs.size_bytes = spec.size_bytes / kBlockBytes * kBlockBytes;
  fs.inodes = spec.inodes;

  auto dir = SEALRUN_TRY_CTX(open_ownedfs_dir(state, true), "owned file system");
  Progress made{dir.get(), spec.id};
  Record rec{spec.id, ::getpid(),    "",        fs.image_path,      mount_point,
             "",      fs.size_bytes, fs.inodes, utc_timestamp_now()};
  rec.controller_start = SEALRUN_TRY_CTX(own_starttime(), "owned file system");
  SEALRUN_TRY_CTX(write_record(dir.get(), rec, false, false),
                  "owned file system: record before creating");
  made.record = true;

  auto image =
      open_at(dir.get(), image_name(spec.id), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
  if (!image) {
    std::string what = image.error().err() == EEXIST
                           ? fs.image_path + " exists (left by a killed run? run `sealrun sweep`)"
                           : "create " + fs.image_path;
    return made.undo(std::move(image).error().context("owned file system: " + what));
  }
  made.image = true;
  if (::ftruncate(image->get(), static_cast<off_t>(fs.size_bytes)) != 0)
    return made.undo(Error::from_errno("owned file system: size " + fs.image_path));
  if (auto st = format_image(dir.get(), mkfs, fs.image_path, image->get(), fs.size_bytes,
                             spec.inodes + kReservedInodes, &fs.made_by);
      !st)
    return made.undo(std::move(st).error().context("owned file system"));

  auto loop = attach_loop(spec.host.dev_dir, image->get(), image_name(spec.id));
  if (!loop) return made.undo(std::move(loop).error().context("owned file system: loop device"));
  fs.loop_device = loop->path;
  fs.direct_io = loop->direct_io;
  rec.loop_device = loop->path;
  // The loop device is a convenience for sweep (which finds the device through the mount) and dies
  // with a reboot anyway.
  if (auto st = write_record(dir.get(), rec, true, false); !st)
    return made.undo(std::move(st).error().context("owned file system: record the loop device"));

  UniqueFd fsfd(::fsopen("ext4", FSOPEN_CLOEXEC));
  if (!fsfd) return made.undo(Error::from_errno("owned file system: fsopen ext4"));
  // noinit_itable: no background zeroing of inode tables (it would fill the sparse image for a
  // file system that is thrown away); nobarrier: no cache flushes for data that dies with the run.
  for (const char* flag : {"noinit_itable", "nobarrier"})
    if (auto st = fs_config(fsfd.get(), FSCONFIG_SET_FLAG, flag, nullptr); !st)
      return made.undo(std::move(st).error().context("owned file system"));
  if (auto st = fs_config(fsfd.get(), FSCONFIG_SET_STRING, "source", loop->path.c_str()); !st)
    return made.undo(std::move(st).error().context("owned file system"));
  if (auto st = fs_config(fsfd.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr); !st)
    return made.undo(std::move(st).error().context("owned file system: mount " + loop->path));
  UniqueFd mnt(::fsmount(fsfd.get(), FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV));
  if (!mnt) return made.undo(Error::from_errno("owned file system: fsmount"));
  loop->fd.reset();  // the file system holds the device now; autoclear acts on its release

  auto root = open_at(mnt.get(), ".", O_RDONLY | O_DIRECTORY);
  if (!root) return made.undo(std::move(root).error().context("owned file system: its root"));
  uint64_t visible = 1;  // the root
  if (!spec.marker_name.empty()) {
    auto marker =
        open_at(root->get(), spec.marker_name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
    if (!marker) return made.undo(std::move(marker).error().context("owned file system: marker"));
    if (auto st = write_all(marker->get(), spec.marker_text, spec.marker_name); !st)
      return made.undo(std::move(st).error().context("owned file system: marker"));
    ++visible;
  }
  if (!spec.job_dir.empty()) {
    // The job's directory is its root: counted instead of the file system's (which `visible`
    // already counts), so the root falls among the reserved inodes; lost+found (of no use on a
    // file system thrown away after one run) goes, so that the count stays exact without filler.
    if (::unlinkat(root->get(), "lost+found", AT_REMOVEDIR) != 0 && errno != ENOENT)
      return made.undo(Error::from_errno("owned file system: remove lost+found"));
    if (::mkdirat(root->get(), spec.job_dir.c_str(), 0700) != 0)
      return made.undo(Error::from_errno("owned file system: mkdir " + spec.job_dir));
    auto dir = open_at(root->get(), spec.job_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    if (!dir) return made.undo(std::move(dir).error().context("owned file system"));
    if (::fchown(dir->get(), spec.owner_uid, spec.owner_gid) != 0 ||
        ::fchmod(dir->get(), spec.root_mode) != 0)
      return made.undo(Error::from_errno("owned file system: owner and mode of " + spec.job_dir));
  }
  if (auto st = fill_spare_inodes(root->get(), spec.inodes, visible, &fs.reserved_inodes); !st)
    return made.undo(std::move(st).error().context("owned file system"));
  const bool job_root = spec.job_dir.empty();
  if (::fchown(root->get(), job_root ? spec.owner_uid : 0, job_root ? spec.owner_gid : 0) != 0 ||
      ::fchmod(root->get(), job_root ? spec.root_mode : 0711) != 0)
    return made.undo(Error::from_errno("owned file system: owner and mode of its root"));

  if (::move_mount(mnt.get(), "", target.get(), "",
                   MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0)
    return made.undo(Error::from_errno("owned file system: move_mount onto " + mount_point));
  made.mounted_at = mount_point;
  struct stat st {};
  if (::fstat(root->get(), &st) != 0)
    return made.undo(Error::from_errno("owned file system: stat its root"));
  fs.device = st.st_dev;
  fs.create_ms = monotonic_ms() - start;
  return fs;
}

}  // namespace sealrun::ownedfs
