// SPDX-License-Identifier: Apache-2.0
// mount_at() and mount_holders(): see mounts.h.
#include "containment/ownedfs/mounts.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <charconv>
#include <memory>
#include <sstream>

#include "core/bounded_file.h"
#include "core/proc.h"

namespace sealrun::ownedfs {
namespace {

constexpr size_t kMaxMountinfoBytes = 16 * kMiB;
constexpr size_t kMaxProcesses = 65536;
constexpr size_t kMaxFdsPerProcess = 65536;

bool on_device(const std::string& path, dev_t device) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && st.st_dev == device;
}

std::string comm_of(const std::string& proc_dir, const std::string& pid) {
  auto c = read_bounded_file(AT_FDCWD, proc_dir + "/" + pid + "/comm", 256);
  if (!c) return "?";
  std::string s = *c;
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

// Whether the process at `base` lives in a mount namespace other than ours (then it keeps its own
// copy of the mounts that existed when that namespace was made).
bool other_mount_namespace(const std::string& proc_dir, const std::string& base) {
  struct stat mine {
  }, theirs{};
  return ::stat((own_entry(proc_dir) + "/ns/mnt").c_str(), &mine) == 0 &&
         ::stat((base + "/ns/mnt").c_str(), &theirs) == 0 && mine.st_ino != theirs.st_ino;
}

// Whether a mountinfo file lists a mount of `device` (its third field, "major:minor").
bool mounts_device(const std::string& mountinfo, dev_t device) {
  auto text = read_bounded_file(AT_FDCWD, mountinfo, kMaxMountinfoBytes);
  if (!text) return false;
  std::string want = fmt::format(" {}:{} ", major(device), minor(device));
  return text->find(want) != std::string::npos;
}

}  // namespace

std::string own_entry(const std::string& proc_dir) {
  // The mount namespace is the thread's (private_ns.h): /proc/self would show the main thread's.
  struct stat st {};
  return ::stat((proc_dir + "/thread-self").c_str(), &st) == 0 ? proc_dir + "/thread-self"
                                                               : proc_dir + "/self";
}

namespace {

// Every mount of our namespace as (mount point, entry), in mountinfo's order (a later line is
// mounted on top of an earlier one at the same point).
Result<std::vector<std::pair<std::string, MountEntry>>> all_mounts(const std::string& proc_dir) {
  // /proc files report size 0: read_bounded_file reads until EOF within the cap.
  std::string text = SEALRUN_TRY(
      read_bounded_file(AT_FDCWD, own_entry(proc_dir) + "/mountinfo", kMaxMountinfoBytes));
  std::vector<std::pair<std::string, MountEntry>> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string id, parent, majmin, root, point, opts, word;
    if (!(f >> id >> parent >> majmin >> root >> point >> opts)) continue;
    while (f >> word && word != "-") {
    }
    MountEntry e;
    if (!(f >> e.fstype >> e.source)) continue;
    unsigned maj = 0, min = 0;
    auto colon = majmin.find(':');
    if (colon == std::string::npos) continue;
    std::from_chars(majmin.data(), majmin.data() + colon, maj);
    std::from_chars(majmin.data() + colon + 1, majmin.data() + majmin.size(), min);
    e.device = makedev(maj, min);
    e.source = unescape_mountinfo(e.source);
    out.emplace_back(unescape_mountinfo(point), e);
  }
  return out;
}

}  // namespace

Result<std::optional<MountEntry>> mount_at(const std::string& proc_dir,
                                           const std::string& mount_point) {
  std::optional<MountEntry> found;
  for (auto& [point, e] : SEALRUN_TRY(all_mounts(proc_dir)))
    if (point == mount_point) found = e;  // later lines are mounted on top of earlier ones
  return found;
}

Result<std::vector<std::pair<std::string, MountEntry>>> mounts_below(const std::string& proc_dir,
                                                                     const std::string& dir) {
  std::vector<std::pair<std::string, MountEntry>> out;
  const std::string prefix = dir + "/";
  for (auto& [point, e] : SEALRUN_TRY(all_mounts(proc_dir))) {
    if (point.compare(0, prefix.size(), prefix) != 0) continue;
    std::string name = point.substr(prefix.size());
    if (name.empty() || name.find('/') != std::string::npos) continue;
    bool replaced = false;
    for (auto& [p, top] : out)
      if (p == point) top = e, replaced = true;  // the topmost one
    if (!replaced) out.emplace_back(point, e);
  }
  return out;
}

std::vector<std::string> mount_holders(const std::string& proc_dir, dev_t device, size_t max) {
  std::vector<std::string> out;
  std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(proc_dir.c_str()), &::closedir);
  if (!d) return out;
  size_t seen = 0;
  while (struct dirent* e = ::readdir(d.get())) {
    std::string pid = e->d_name;
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    if (++seen > kMaxProcesses || out.size() >= max) break;
    std::string base = proc_dir + "/" + pid;
    std::string how;
    if (on_device(base + "/cwd", device)) {
      how = "cwd";
    } else if (on_device(base + "/root", device)) {
      how = "root";
    } else if (std::unique_ptr<DIR, int (*)(DIR*)> fds(::opendir((base + "/fd").c_str()),
                                                       &::closedir);
               fds) {
      size_t n = 0;
      while (struct dirent* f = ::readdir(fds.get())) {
        if (f->d_name[0] == '.' || ++n > kMaxFdsPerProcess) continue;
        if (on_device(base + "/fd/" + f->d_name, device)) {
          how = fmt::format("open file (fd {})", f->d_name);
          break;
        }
      }
    }
    // A process in another mount namespace that still has the file system mounted there (one
    // made by unshare(CLONE_NEWNS) while it was mounted here, e.g. podman's pause process).
    if (how.empty() && other_mount_namespace(proc_dir, base) &&
        mounts_device(base + "/mountinfo", device))
      how = kOtherNamespaceHolder;
    if (!how.empty())
      out.push_back(fmt::format("pid {} ({}): {}", pid, comm_of(proc_dir, pid), how));
  }
  return out;
}

std::string fs_context_messages(int fsfd) {
  std::string out;
  char buf[512];
  for (int i = 0; i < 8; ++i) {
    ssize_t n = ::read(fsfd, buf, sizeof buf - 1);
    if (n <= 0) break;
    out += (out.empty() ? "" : "; ") + std::string(buf, static_cast<size_t>(n));
  }
  return out.empty() ? "" : " (" + out + ")";
}

}  // namespace sealrun::ownedfs
