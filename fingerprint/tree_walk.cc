// The directory walk of semantic-tree-v1: see tree_walk.h. Every step is relative to an open
// directory descriptor: fstatat(AT_SYMLINK_NOFOLLOW) to decide what a name is, openat with
// O_NOFOLLOW (plus O_DIRECTORY for directories) to enter or read it, and an inode check that what
// was opened is what was looked at. A symlink swapped in for a directory mid-walk is therefore
// never followed, and a directory that is replaced is an error rather than a silent detour.
// Descriptors held at once: one per directory level on the current path plus the pool's queue.
#include "fingerprint/tree_walk.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sched.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "core/syscall.h"
#include "fingerprint/tree_hash_pool.h"

namespace sealrun {
namespace {

struct DirCloser {
  void operator()(DIR* d) const { ::closedir(d); }
};

const char* special_kind(mode_t mode) {
  if (S_ISFIFO(mode)) return "FIFO";
  if (S_ISSOCK(mode)) return "socket";
  if (S_ISCHR(mode)) return "character device";
  if (S_ISBLK(mode)) return "block device";
  return "file of unknown type";
}

// Names in one directory, read through its descriptor. The names are collected before any of
// them is visited, so the DIR stream (and its buffer) is closed before we descend.
Result<std::vector<std::string>> list_names(int dirfd, const std::string& display) {
  int dup_fd = ::fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
  if (dup_fd < 0) return Error::from_errno(fmt::format("dup directory {}", display));
  std::unique_ptr<DIR, DirCloser> dir(::fdopendir(dup_fd));
  if (!dir) {
    int err = errno;
    ::close(dup_fd);
    return Error::with_errno(err, fmt::format("read directory {}", display));
  }
  ::rewinddir(dir.get());
  std::vector<std::string> names;
  for (;;) {
    errno = 0;
    struct dirent* de = ::readdir(dir.get());
    if (de == nullptr) {
      if (errno != 0) return Error::from_errno(fmt::format("read directory {}", display));
      break;
    }
    std::string_view name(de->d_name);
    if (name == "." || name == "..") continue;
    names.emplace_back(name);
  }
  return names;
}

Result<std::string> read_link_at(int dirfd, const std::string& name, const struct stat& st,
                                 const std::string& display) {
  // st_size is the target's length for ordinary filesystems, 0 for some (procfs): start there and
  // grow until the result is not truncated.
  size_t size = std::max<size_t>(static_cast<size_t>(st.st_size) + 1, 256);
  for (;;) {
    std::string buf(size, '\0');
    ssize_t n = ::readlinkat(dirfd, name.c_str(), buf.data(), buf.size());
    if (n < 0) return Error::from_errno(fmt::format("readlink {}", display));
    if (static_cast<size_t>(n) < buf.size()) {
      buf.resize(static_cast<size_t>(n));
      return buf;
    }
    size *= 2;
  }
}

class Walker {
 public:
  Walker(int root_fd, const std::string& root_display, const TreeOptions& options,
         const std::optional<WalkExclusion>& exclude, const DigestLookup* reuse, unsigned threads)
      : root_display_(root_display),
        options_(options),
        exclude_(exclude),
        reuse_(reuse),
        pool_(root_fd, root_display_, threads, options.stamp_clock) {}

  Result<WalkedTree> run(int root_fd) {
    auto root_st = SEALRUN_TRY(fstat_fd(root_fd, root_display_));
    tree_.entries.push_back(directory_entry(".", root_st));
    auto root_fs = filesystem_of(root_fd, root_st, root_display_);
    Status walked =
        root_fs.ok() ? walk_dir(root_fd, "", *root_fs) : Status(std::move(root_fs).error());
    // A failed walk needs no more hashing; but the pool is always drained before returning, since
    // its jobs point into tree_.
    if (walked.ok()) {
      pool_.walk_finished();
      walk_complete_ = true;
    } else {
      pool_.cancel();
    }
    Status hashed = pool_.finish([&] { report_progress(true); });
    if (!walked.ok()) return std::move(walked).error();
    if (!hashed.ok()) return std::move(hashed).error();
    report_progress(true);
    return std::move(tree_);
  }

 private:
  static TreeEntry directory_entry(std::string path, const struct stat& st) {
    TreeEntry e;
    e.path = std::move(path);
    e.kind = EntryKind::kDirectory;
    e.mode = st.st_mode & 07777;
    e.uid = st.st_uid;
    e.gid = st.st_gid;
    return e;
  }

  std::string display(const std::string& rel) const {
    return tree_entry_display(root_display_, rel);
  }

  // The index of the file system that `dirfd` (whose fstat is `st`) is on, adding it when new.
  // Called for the root and for each directory on another device than its parent: a mount point.
  Result<uint32_t> filesystem_of(int dirfd, const struct stat& st, const std::string& shown) {
    struct statfs sfs {};
    if (::fstatfs(dirfd, &sfs) != 0) return Error::from_errno(fmt::format("statfs {}", shown));
    uint64_t fsid = 0;
    static_assert(sizeof(sfs.f_fsid) == sizeof(fsid));
    std::memcpy(&fsid, &sfs.f_fsid, sizeof(fsid));
    const FsIdentity id{static_cast<uint64_t>(st.st_dev), fsid, static_cast<uint64_t>(sfs.f_type)};
    for (uint32_t i = 0; i < tree_.filesystems.size(); ++i)
      if (tree_.filesystems[i] == id) return i;
    tree_.filesystems.push_back(id);
    return static_cast<uint32_t>(tree_.filesystems.size() - 1);
  }

  void report_progress(bool force) {
    if (!options_.on_progress && !options_.progress) return;
    const int64_t now = monotonic_ms();
    if (!force && now - last_progress_ms_ < 200) return;
    last_progress_ms_ = now;
    HashProgress p;
    p.files_found = tree_.files;
    p.bytes_found = tree_.regular_bytes;
    p.files_from_cache = tree_.files_from_cache;
    p.files_done = pool_.done_files() + tree_.files_from_cache;
    p.bytes_done = pool_.done_bytes() + bytes_from_cache_;
    p.walk_complete = walk_complete_;
    if (options_.on_progress) options_.on_progress(p);
    if (options_.progress && walk_complete_) options_.progress(p.bytes_done, p.bytes_found);
  }

  Status walk_dir(int dirfd, const std::string& prefix, uint32_t fs) {
    const std::string here = prefix.empty() ? root_display_ : display(prefix);
    auto names = SEALRUN_TRY(list_names(dirfd, here));
    for (const std::string& name : names) {
      if (pool_.failed()) return ok_status();  // finish() reports the pool's error
      report_progress(false);
      std::string rel = prefix.empty() ? name : prefix + "/" + name;
      SEALRUN_TRY(visit(dirfd, name, std::move(rel), fs));
    }
    return ok_status();
  }

  void add_file(std::string rel, const struct stat& st, uint32_t dir_fs) {
    TreeEntry& e = tree_.entries.emplace_back();
    e.path = std::move(rel);
    e.kind = EntryKind::kFile;
    // A file on another device than its directory (a bind-mounted file) has a file system the
    // walk never identified: it is hashed, and not cached.
    if (tree_.filesystems[dir_fs].dev == static_cast<uint64_t>(st.st_dev)) e.fs = dir_fs;
    const auto size = static_cast<uint64_t>(st.st_size);
    ++tree_.files;
    tree_.regular_bytes += size;
    if (reuse_ != nullptr && e.fs != TreeEntry::kNoFs) {
      if (auto hit = (*reuse_)(e.path, st, tree_.filesystems[e.fs])) {
        e.mode = st.st_mode & 07777;
        e.uid = st.st_uid;
        e.gid = st.st_gid;
        e.bytes = size;
        e.sha256 = std::move(hit->sha256);
        e.stamp = hit->stamp;
        e.from_cache = true;
        ++tree_.files_from_cache;
        bytes_from_cache_ += size;
        return;
      }
    }
    pool_.submit(HashPool::Job{&e, size, st.st_dev, st.st_ino});
  }

  Status visit(int dirfd, const std::string& name, std::string rel, uint32_t fs) {
    struct stat st {};
    if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
      return Error::from_errno(
          fmt::format("stat {} (did the tree change during the walk?)", display(rel)));
    if (exclude_ && st.st_dev == exclude_->dev && st.st_ino == exclude_->ino)
      return Error::make(
          fmt::format("{} ({}) is inside the tree being inventoried; write it "
                      "outside {}",
                      exclude_->what, display(rel), root_display_));

    if (S_ISREG(st.st_mode)) {
      add_file(std::move(rel), st, fs);
      return ok_status();
    }
    if (S_ISLNK(st.st_mode)) {
      TreeEntry& e = tree_.entries.emplace_back();
      e.path = std::move(rel);
      e.kind = EntryKind::kSymlink;
      e.mode = st.st_mode & 07777;
      e.uid = st.st_uid;
      e.gid = st.st_gid;
      e.target = SEALRUN_TRY(read_link_at(dirfd, name, st, display(e.path)));
      return ok_status();
    }
    if (S_ISDIR(st.st_mode)) {
      const std::string shown = display(rel);
      int fd = retry_eintr([&] {
        return ::openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      });
      if (fd < 0)
        return Error::from_errno(fmt::format("open directory {} (did the tree change?)", shown));
      UniqueFd child(fd);
      auto opened = SEALRUN_TRY(fstat_fd(child.get(), shown));
      if (opened.st_dev != st.st_dev || opened.st_ino != st.st_ino)
        return Error::make(fmt::format("directory {} was replaced during the walk", shown));
      uint32_t child_fs = fs;
      if (static_cast<uint64_t>(opened.st_dev) != tree_.filesystems[fs].dev)
        child_fs = SEALRUN_TRY(filesystem_of(child.get(), opened, shown));
      tree_.entries.push_back(directory_entry(rel, opened));
      return walk_dir(child.get(), rel, child_fs);
    }
    return Error::make(fmt::format(
        "{} is a {}; semantic-tree-v1 records only regular files, directories and symlinks: "
        "remove it or inventory a copy of the tree without it",
        display(rel), special_kind(st.st_mode)));
  }

  const std::string root_display_;
  const TreeOptions& options_;
  const std::optional<WalkExclusion>& exclude_;
  const DigestLookup* reuse_;
  WalkedTree tree_;
  HashPool pool_;
  uint64_t bytes_from_cache_ = 0;
  bool walk_complete_ = false;
  int64_t last_progress_ms_ = 0;
};

}  // namespace

unsigned default_hash_threads() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return static_cast<unsigned>(n);
  }
  unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? hw : 1;
}

std::string tree_entry_display(const std::string& root_display, const std::string& rel) {
  return root_display == "." ? rel : fmt::format("{}/{}", root_display, rel);
}

Result<WalkedTree> walk_and_hash(int root_fd, const std::string& root_display,
                                 const TreeOptions& options,
                                 const std::optional<WalkExclusion>& exclude,
                                 const DigestLookup* reuse) {
  unsigned threads = options.threads == 0 ? default_hash_threads() : options.threads;
  Walker walker(root_fd, root_display, options, exclude, reuse, threads);
  return walker.run(root_fd);
}

}  // namespace sealrun
