// SPDX-License-Identifier: Apache-2.0
// plan_view() and the compatibility links: see view_plan.h.
#include "containment/view_plan.h"

#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <string_view>

namespace sealrun {

bool at_or_below(std::string_view path, std::string_view dir) {
  return path == dir || dir == "/" ||
         (path.size() > dir.size() && path.substr(0, dir.size()) == dir && path[dir.size()] == '/');
}

namespace {

// How an entry's host bytes reach the job (ViewEntry::served): pinned trees and closure files from
// a verified image when the run made one, else live; the source is the run's verified snapshot
// or export, generated files and podman's loaded image are copies; kernel-made, writable and
// mechanism-made entries (links, directories) bind no host bytes.
std::string served_as(ViewKind kind, bool writable, bool from_image) {
  if (writable) return {};
  switch (kind) {
    case ViewKind::kToolchain:
    case ViewKind::kTree:
    case ViewKind::kImage:
    case ViewKind::kClosure:
      return from_image ? "image" : "live";
    case ViewKind::kSource:
    case ViewKind::kGenerated:
      return "copy";
    case ViewKind::kInit:
      return "live";
    default:
      return {};
  }
}

// a == b, or one lies below the other.
bool overlaps(std::string_view a, std::string_view b) {
  return at_or_below(a, b) || at_or_below(b, a);
}

}  // namespace

std::vector<ViewEntry> plan_view(const ContainmentSpec& spec, ViewRoot root) {
  std::vector<ViewEntry> view;
  if (root == ViewRoot::kImage && spec.image)
    view.push_back({"/",
                    ViewKind::kImage,
                    spec.image->archive_path,
                    spec.image->image_id,
                    false,
                    {},
                    -1,
                    "copy"});  // podman's storage, loaded from the verified archive
  // Made by the kernel or the mechanism, holding no host bytes: /proc (the job's own pid
  // namespace), a minimal /dev (null, zero, full, random, urandom, tty), a private empty /tmp.
  view.push_back({"/proc", ViewKind::kProc, {}, {}, false, {}, -1});
  view.push_back({"/dev", ViewKind::kDev, {}, {}, false, {}, -1});
  // Podman (an image root) also mounts sysfs read-only at /sys; bwrap mounts none.
  if (root == ViewRoot::kImage) view.push_back({"/sys", ViewKind::kSys, {}, {}, false, {}, -1});
  view.push_back({"/tmp", ViewKind::kTmp, {}, {}, true, {}, -1});
  for (size_t i = 0; i < spec.mounts.size(); ++i) {
    const MountSpec& m = spec.mounts[i];
    // An unpacked image's entries (image_root.h) stand for the image in an empty root; where the
    // image itself is the root they are not mounted again.
    if (m.kind == ViewKind::kImage && root == ViewRoot::kImage) continue;
    view.push_back({m.target,
                    m.kind,
                    m.source,
                    m.pin,
                    m.access == MountSpec::Access::kWritable,
                    {},
                    static_cast<int>(i),
                    served_as(m.kind, m.access == MountSpec::Access::kWritable, m.image_fd >= 0)});
  }
  // An image's root has its own /bin and /lib layout, and podman cannot make links in it: links
  // and closure directories are part of an empty-tmpfs view only (and so absent from a podman
  // run's recorded view).
  // A link to a mount's own place is kept (podman binds that mount there again).
  auto to_a_mount = [&spec](const ViewEntry& e) {
    for (const MountSpec& m : spec.mounts)
      if (e.kind == ViewKind::kLink && m.target == e.link_target) return true;
    return false;
  };
  for (const ViewEntry& e : spec.files_and_links)
    if (root == ViewRoot::kEmptyTmpfs || (e.kind != ViewKind::kLink && e.kind != ViewKind::kDir) ||
        to_a_mount(e)) {
      view.push_back(e);
      view.back().served = served_as(e.kind, e.writable, spec.closure_image_fd >= 0);
    }
  return view;
}

std::vector<CompatLink> read_host_compat_links() {
  std::vector<CompatLink> out;
  constexpr std::array<const char*, 6> kTop = {"/bin",   "/sbin",  "/lib",
                                               "/lib32", "/lib64", "/libx32"};
  for (const char* path : kTop) {
    struct stat st {};
    if (::lstat(path, &st) != 0 || !S_ISLNK(st.st_mode)) continue;
    char buf[4096];
    ssize_t n = ::readlink(path, buf, sizeof buf - 1);
    if (n <= 0) continue;
    std::string target(buf, static_cast<size_t>(n));
    // Only links into /usr are the merged-/usr layout; anything else is the host's own business.
    if (target.rfind("usr/", 0) != 0 && target.rfind("/usr/", 0) != 0) continue;
    out.push_back({path, target});
  }
  return out;
}

void add_compat_links(const std::vector<CompatLink>& host, ContainmentSpec* spec) {
  for (const CompatLink& link : host) {
    std::string target = link.target[0] == '/' ? link.target : "/" + link.target;
    bool has_target = false;
    bool path_taken = false;
    for (const MountSpec& m : spec->mounts) {
      // A mount at or above the target must hold it (a pinned /usr without lib32 gets no /lib32
      // link); one below it (the toolchain in /usr/lib/gcc/...) makes its directories exist.
      if (at_or_below(target, m.target)) {
        struct stat st {};
        std::string host = m.source + target.substr(m.target == "/" ? 0 : m.target.size());
        has_target = has_target || ::stat(host.c_str(), &st) == 0;
      } else {
        has_target = has_target || overlaps(m.target, target);
      }
      path_taken = path_taken || overlaps(m.target, link.path);
    }
    for (const ViewEntry& e : spec->files_and_links) {
      has_target = has_target || overlaps(e.job_path, target);
      path_taken = path_taken || overlaps(e.job_path, link.path);
    }
    if (has_target && !path_taken)
      spec->files_and_links.push_back(
          {link.path, ViewKind::kLink, {}, "symlink:" + link.target, false, link.target, -1});
  }
}

}  // namespace sealrun
