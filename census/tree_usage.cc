// measure_tree() and free_bytes_at(): see tree_usage.h.
#include "census/tree_usage.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <unordered_set>
#include <vector>

#include "core/syscall.h"

namespace sealrun::census {

namespace {

struct InodeKey {
  dev_t dev;
  ino_t ino;
  bool operator==(const InodeKey& o) const { return dev == o.dev && ino == o.ino; }
};
struct InodeHash {
  size_t operator()(const InodeKey& k) const { return std::hash<uint64_t>()(k.ino * 31 + k.dev); }
};

class Walker {
 public:
  Walker(const WalkBudget& budget, dev_t root_dev)
      : budget_(budget), root_dev_(root_dev), deadline_(monotonic_ms() + budget.max_ms) {}

  void count(const struct stat& st) {
    ++usage_.paths;
    if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode))
      usage_.logical_bytes += static_cast<uint64_t>(st.st_size);
    // Hard links share blocks: count each inode once. Directories cannot be hard-linked.
    if (S_ISDIR(st.st_mode) || st.st_nlink <= 1 || seen_.insert({st.st_dev, st.st_ino}).second)
      usage_.allocated_bytes += static_cast<uint64_t>(st.st_blocks) * 512;
  }

  bool out_of_budget() {
    if (usage_.paths >= budget_.max_paths || monotonic_ms() > deadline_) usage_.complete = false;
    return !usage_.complete;
  }

  // Iterative walk over relative paths, so a wide tree never holds more than one directory fd
  // open. Each directory is opened with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
  // RESOLVE_NO_XDEV) from the root: a job that swaps a directory for a symlink mid-walk cannot
  // steer the census outside the tree or onto another filesystem.
  void walk(int root_fd) {
    std::vector<std::string> pending{"."};
    while (!pending.empty() && !out_of_budget()) {
      std::string rel = std::move(pending.back());
      pending.pop_back();
      int dfd = open_beneath(root_fd, rel);
      DIR* dir = dfd >= 0 ? ::fdopendir(dfd) : nullptr;
      if (dir == nullptr) {
        if (dfd >= 0) ::close(dfd);
        ++usage_.unreadable;
        continue;
      }
      while (struct dirent* e = ::readdir(dir)) {
        std::string_view name(e->d_name);
        if (name == "." || name == "..") continue;
        if (out_of_budget()) break;
        struct stat st {};
        if (::fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // vanished
        count(st);
        if (S_ISDIR(st.st_mode) && st.st_dev == root_dev_)
          pending.push_back(rel == "." ? std::string(name) : rel + "/" + std::string(name));
      }
      ::closedir(dir);
    }
  }

  static int open_beneath(int root_fd, const std::string& rel) {
    struct open_how how {};
    how.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS;
    return static_cast<int>(retry_eintr(
        [&] { return ::syscall(SYS_openat2, root_fd, rel.c_str(), &how, sizeof how); }));
  }

  TreeUsage usage_;

 private:
  WalkBudget budget_;
  dev_t root_dev_;
  int64_t deadline_;
  std::unordered_set<InodeKey, InodeHash> seen_;
};

}  // namespace

Result<TreeUsage> measure_tree(const std::string& root, const WalkBudget& budget) {
  int64_t start = monotonic_ms();
  auto fd = SEALRUN_TRY(open_at(AT_FDCWD, root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW));
  auto st = SEALRUN_TRY(fstat_fd(fd.get(), root));
  Walker walker(budget, st.st_dev);
  walker.count(st);
  walker.walk(fd.get());
  walker.usage_.walk_ms = monotonic_ms() - start;
  return walker.usage_;
}

Result<uint64_t> free_bytes_at(const std::string& path) {
  struct statvfs vfs {};
  if (::statvfs(path.c_str(), &vfs) != 0) return Error::from_errno(fmt::format("statvfs {}", path));
  return static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
}

}  // namespace sealrun::census
