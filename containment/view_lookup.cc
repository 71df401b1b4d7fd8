// SPDX-License-Identifier: Apache-2.0
// lookup_in_view(): see view_lookup.h.
#include "containment/view_lookup.h"

#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <deque>

#include "containment/view_plan.h"

namespace sealrun {

namespace {

constexpr int kMaxLinks = 40;  // the kernel's MAXSYMLINKS

std::deque<std::string> components(std::string_view path) {
  std::deque<std::string> out;
  size_t at = 0;
  while (at < path.size()) {
    size_t slash = path.find('/', at);
    if (slash == std::string_view::npos) slash = path.size();
    if (slash > at) out.emplace_back(path.substr(at, slash - at));
    at = slash + 1;
  }
  return out;
}

std::string join(const std::string& dir, const std::string& name) {
  std::string out;
  out.reserve(dir.size() + 1 + name.size());
  if (dir != "/") out.append(dir);
  out.push_back('/');
  out.append(name);
  return out;
}

std::string parent_of(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

bool kernel_made(ViewKind k) {
  return k == ViewKind::kTmp || k == ViewKind::kProc || k == ViewKind::kDev || k == ViewKind::kSys;
}

// What one path of the view is, links not yet followed.
struct Node {
  enum class Is { kFile, kDirectory, kLink, kMissing, kUnknown } is = Is::kUnknown;
  std::string host_path;  // kFile
  std::string link;       // kLink: the link's text
};

class Resolver {
 public:
  explicit Resolver(const std::vector<ViewEntry>& view) : view_(view) {}

  Node node(const std::string& path) const {
    const ViewEntry* exact = nullptr;
    const ViewEntry* cover = nullptr;  // the deepest entry strictly above `path`
    bool holds_deeper = false;         // some entry lies strictly below `path`
    for (const ViewEntry& e : view_) {
      if (e.job_path == path) {
        exact = &e;  // the last one wins: later entries are mounted over earlier ones
      } else if (at_or_below(path, e.job_path)) {
        if (cover == nullptr || e.job_path.size() >= cover->job_path.size()) cover = &e;
      } else if (at_or_below(e.job_path, path)) {
        holds_deeper = true;
      }
    }
    if (exact != nullptr) {
      if (exact->kind == ViewKind::kLink) return {Node::Is::kLink, "", exact->link_target};
      if (exact->host_path.empty())
        return {exact->kind == ViewKind::kDir || kernel_made(exact->kind) ? Node::Is::kDirectory
                                                                          : Node::Is::kUnknown};
      // A mount's (or a bound file's) source is resolved on the host, as the mechanism binds it.
      return host_node(exact->host_path, holds_deeper, true);
    }
    if (cover == nullptr) return {holds_deeper ? Node::Is::kDirectory : Node::Is::kMissing};
    if (cover->kind == ViewKind::kDir)
      return {holds_deeper ? Node::Is::kDirectory : Node::Is::kMissing};
    if (cover->host_path.empty() || cover->writable) return {Node::Is::kUnknown};
    const std::string rest = cover->job_path == "/" ? path : path.substr(cover->job_path.size());
    return host_node(cover->host_path + rest, holds_deeper, false);
  }

 private:
  static Node host_node(const std::string& host, bool holds_deeper, bool follow) {
    struct stat st {};
    if ((follow ? ::stat(host.c_str(), &st) : ::lstat(host.c_str(), &st)) != 0) {
      if (errno == ENOENT || errno == ENOTDIR)
        return {holds_deeper ? Node::Is::kDirectory : Node::Is::kMissing};
      return {Node::Is::kUnknown};
    }
    if (S_ISLNK(st.st_mode)) {
      char buf[PATH_MAX];
      ssize_t n = ::readlink(host.c_str(), buf, sizeof buf);
      if (n <= 0 || static_cast<size_t>(n) >= sizeof buf) return {Node::Is::kUnknown};
      return {Node::Is::kLink, "", std::string(buf, static_cast<size_t>(n))};
    }
    if (S_ISDIR(st.st_mode)) return {Node::Is::kDirectory};
    if (S_ISREG(st.st_mode)) return {Node::Is::kFile, host};
    return {Node::Is::kUnknown};  // a device, a fifo: nothing to say about it
  }

  const std::vector<ViewEntry>& view_;
};

}  // namespace

ViewLookup lookup_in_view(const std::vector<ViewEntry>& view, std::string_view job_path) {
  using Found = ViewLookup::Found;
  Resolver resolver(view);
  std::deque<std::string> left = components(job_path);
  std::string at = "/";
  int links = 0;
  while (!left.empty()) {
    std::string name = std::move(left.front());
    left.pop_front();
    if (name == ".") continue;
    if (name == "..") {
      at = parent_of(at);
      continue;
    }
    const std::string next = join(at, name);
    Node n = resolver.node(next);
    switch (n.is) {
      case Node::Is::kMissing:
        return {Found::kMissing, next, ""};
      case Node::Is::kUnknown:
        return {Found::kUnknown, next, ""};
      case Node::Is::kDirectory:
        at = next;
        break;
      case Node::Is::kFile:
        if (!left.empty()) return {Found::kMissing, next, ""};  // ENOTDIR: nothing below a file
        return {Found::kFile, next, n.host_path};
      case Node::Is::kLink: {
        if (++links > kMaxLinks) return {Found::kUnknown, next, ""};  // ELOOP: not ours to say
        std::deque<std::string> target = components(n.link);
        left.insert(left.begin(), target.begin(), target.end());
        if (!n.link.empty() && n.link[0] == '/')
          at.assign(1, '/');  // (not = "/": GCC 12 warns falsely)
        break;
      }
    }
  }
  return {Found::kDirectory, at, ""};
}

}  // namespace sealrun
