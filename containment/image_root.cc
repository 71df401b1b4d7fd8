// SPDX-License-Identifier: Apache-2.0
// plan_image_root(): see image_root.h.
#include "containment/image_root.h"

#include <dirent.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

namespace sealrun {

namespace {

constexpr int kMaxDepth = 64;

bool strictly_below(const std::string& path, const std::string& dir) {
  return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
         (dir == "/" || path[dir.size()] == '/');
}

Status plan_dir(const std::string& rootfs, const std::string& job_dir, const std::string& pin,
                const std::vector<std::string>& others, int depth, ImageRootPlan* out) {
  if (depth > kMaxDepth) return Error::make("image root: directories nested too deep");
  std::string host_dir = job_dir == "/" ? rootfs : rootfs + job_dir;
  DIR* d = ::opendir(host_dir.c_str());
  if (d == nullptr) return Error::from_errno("image root: opendir " + host_dir);
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  for (const std::string& n : names) {
    std::string job = job_dir == "/" ? "/" + n : job_dir + "/" + n;
    std::string host = rootfs + job;
    if (std::find(others.begin(), others.end(), job) != others.end()) continue;
    struct stat st {};
    if (::lstat(host.c_str(), &st) != 0) return Error::from_errno("image root: lstat " + host);
    bool holds_other = std::any_of(others.begin(), others.end(),
                                   [&](const std::string& o) { return strictly_below(o, job); });
    if (S_ISLNK(st.st_mode)) {
      char buf[4096];
      ssize_t len = ::readlink(host.c_str(), buf, sizeof buf - 1);
      if (len <= 0) return Error::from_errno("image root: readlink " + host);
      std::string target(buf, static_cast<size_t>(len));
      // A link over a path where another entry goes would redirect that mount: leave it out.
      if (holds_other) continue;
      out->links.push_back({job, ViewKind::kLink, {}, "symlink:" + target, false, target, -1});
    } else if (S_ISDIR(st.st_mode) && holds_other) {
      SEALRUN_TRY(plan_dir(rootfs, job, pin, others, depth + 1, out));
    } else if (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)) {
      out->mounts.push_back({host, job, MountSpec::Access::kReadOnly, ViewKind::kImage, pin});
    }
    // Devices, FIFOs and sockets were never unpacked (fingerprint/image_unpack.h).
  }
  return ok_status();
}

}  // namespace

Result<ImageRootPlan> plan_image_root(const std::string& rootfs, const std::string& image_id,
                                      const std::vector<std::string>& other_paths) {
  ImageRootPlan plan;
  SEALRUN_TRY(plan_dir(rootfs, "/", image_id, other_paths, 0, &plan));
  return plan;
}

}  // namespace sealrun
