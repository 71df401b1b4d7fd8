// SPDX-License-Identifier: Apache-2.0
// The output walker: see output_walk.h.
#include "controller/receipt/output_walk.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <map>
#include <memory>

#include "controller/common/display_text.h"
#include "core/syscall.h"
#include "fingerprint/file_hash.h"
#include "fingerprint/sha256.h"

namespace sealrun::run {

namespace {

using receipt::OutputKind;
using receipt::OutputRecord;

constexpr size_t kChunkBytes = 1 << 20;  // between two questions to `stop`: ~1 ms of hashing
constexpr uint64_t kEntriesPerStopCheck = 1024;

struct DirCloser {
  void operator()(DIR* d) const { ::closedir(d); }
};

std::string shown(const std::string& path) { return display::escape_cut(path, 200); }

bool same_content_identity(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino && a.st_size == b.st_size &&
         a.st_mtim.tv_sec == b.st_mtim.tv_sec && a.st_mtim.tv_nsec == b.st_mtim.tv_nsec &&
         a.st_ctim.tv_sec == b.st_ctim.tv_sec && a.st_ctim.tv_nsec == b.st_ctim.tv_nsec;
}

class Walker {
 public:
  Walker(const OutputLimits& limits, const StopCheck& stop, const OutputProgress& progress)
      : limits_(limits),
        stop_(stop),
        progress_(progress),
        buffer_(std::make_unique_for_overwrite<char[]>(kChunkBytes)) {}

  Result<OutputWalk> run(const std::string& root) {
    check_stop();  // a run stopped before its end collects nothing
    if (interrupted_) return finish_interrupted();
    auto fd = open_at(AT_FDCWD, root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    if (!fd) return std::move(fd).error().context("open the outputs");
    ++walk_.stats.opens;
    auto st = SEALRUN_TRY(fstat_fd(fd->get(), root));
    std::vector<Frame> stack;
    stack.push_back({0, st.st_dev, st.st_ino, {}, 0});
    UniqueFd cur = std::move(*fd);
    SEALRUN_TRY(read_directory(cur.get(), stack.back()));
    while (!interrupted_) {
      Frame& top = stack.back();
      if (top.next < top.subdirs.size()) {
        const Subdir& sub = top.subdirs[top.next++];
        path_.resize(top.prefix_len);
        path_ += sub.name;
        path_ += '/';
        cur = SEALRUN_TRY(open_dir(cur.get(), sub.name, sub.dev, sub.ino));
        stack.push_back({path_.size(), sub.dev, sub.ino, {}, 0});
        ++walk_.stats.directories;
        SEALRUN_TRY(read_directory(cur.get(), stack.back()));
      } else {
        stack.pop_back();
        if (stack.empty()) break;
        // Back up one level through "..", checked to be the directory we came from, so no
        // path is resolved from the root again (that is what made deep trees quadratic).
        cur = SEALRUN_TRY(open_dir(cur.get(), "..", stack.back().dev, stack.back().ino));
        path_.resize(stack.back().prefix_len);
      }
    }
    if (interrupted_) return finish_interrupted();
    finish();
    return std::move(walk_);
  }

 private:
  struct Subdir {
    std::string name;
    dev_t dev;
    ino_t ino;
  };
  struct Frame {
    size_t prefix_len;  // path_ of this directory ("" for the root, else "a/b/")
    dev_t dev;
    ino_t ino;
    std::vector<Subdir> subdirs;  // still to visit
    size_t next;
  };
  struct Item {
    OutputRecord record;
    size_t inode = SIZE_MAX;  // index into digests_ for regular files
  };
  struct InodeDigest {
    std::string sha256;
    uint64_t size = 0;
  };

  void check_stop() {
    if (interrupted_) return;
    if (auto why = stop_ ? stop_() : std::nullopt) interrupted_ = *why;
  }

  Result<UniqueFd> open_dir(int dirfd, const std::string& name, dev_t dev, ino_t ino) {
    ++walk_.stats.opens;
    std::string where = name == ".." ? shown(path_) + " (going back up)" : shown(path_);
    auto fd = open_at(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    if (!fd) return std::move(fd).error().context("open output directory " + where);
    auto st = SEALRUN_TRY(fstat_fd(fd->get(), where));
    if (st.st_dev != dev || st.st_ino != ino)
      return Error::make(fmt::format(
          "the output directory {} was replaced while the outputs were collected", where));
    return std::move(*fd);
  }

  // Reads one directory's names (bounded by the entry limit), records what is not a directory
  // and queues the subdirectories.
  Status read_directory(int dirfd, Frame& frame) {
    int dup = ::fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
    if (dup < 0) return Error::from_errno("read output directory " + shown(path_));
    std::unique_ptr<DIR, DirCloser> dir(::fdopendir(dup));
    if (!dir) {
      ::close(dup);
      return Error::from_errno("read output directory " + shown(path_));
    }
    const size_t prefix_len = path_.size();
    for (;;) {
      errno = 0;
      struct dirent* e = ::readdir(dir.get());
      if (e == nullptr) {
        if (errno != 0) return Error::from_errno("read output directory " + shown(path_));
        break;
      }
      std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      if (++walk_.stats.entries > limits_.max_entries)
        return Error::make(fmt::format(
            "/out holds more than {} entries (files, links and directories, empty ones too, all "
            "count); outputs past that are not recorded",
            limits_.max_entries));
      if (walk_.stats.entries % kEntriesPerStopCheck == 0) check_stop();
      if (interrupted_) return ok_status();
      path_.resize(prefix_len);
      path_ += name;
      if (path_.size() > limits_.max_path_bytes)
        return Error::make(fmt::format(
            "an output path is longer than {} bytes ({} directories deep): {}",
            limits_.max_path_bytes, std::count(path_.begin(), path_.end(), '/'), shown(path_)));
      struct stat st {};
      if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
        return Error::from_errno("stat output " + shown(path_));
      if (S_ISDIR(st.st_mode)) {
        frame.subdirs.push_back({std::move(name), st.st_dev, st.st_ino});
      } else {
        SEALRUN_TRY(record_entry(dirfd, name, st));
        if (interrupted_) return ok_status();
      }
    }
    path_.resize(prefix_len);
    return ok_status();
  }

  Status record_entry(int dirfd, const std::string& name, const struct stat& st) {
    name_bytes_ += path_.size();
    Item item;
    item.record.path = path_;
    if (S_ISREG(st.st_mode)) {
      SEALRUN_TRY(record_file(dirfd, name, st, item));
    } else if (S_ISLNK(st.st_mode)) {
      item.record.kind = OutputKind::kSymlink;
      // A symlink's target is at most PATH_MAX - 1 bytes on Linux; it is read, never followed.
      char target[PATH_MAX + 1];
      ssize_t n = ::readlinkat(dirfd, name.c_str(), target, sizeof(target));
      if (n < 0) return Error::from_errno("read the output symlink " + shown(path_));
      if (static_cast<size_t>(n) >= sizeof(target))
        return Error::make("the output symlink " + shown(path_) + " has a target too long");
      item.record.target.assign(target, static_cast<size_t>(n));
      name_bytes_ += item.record.target.size();
    } else if (S_ISFIFO(st.st_mode)) {
      item.record.kind = OutputKind::kFifo;
    } else if (S_ISSOCK(st.st_mode)) {
      item.record.kind = OutputKind::kSocket;
    } else if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
      item.record.kind = S_ISCHR(st.st_mode) ? OutputKind::kCharDevice : OutputKind::kBlockDevice;
      item.record.device = fmt::format("{}:{}", major(st.st_rdev), minor(st.st_rdev));
    } else {
      return Error::make("the output " + shown(path_) + " is of an unknown file type");
    }
    if (name_bytes_ > limits_.max_name_bytes)
      return Error::make(fmt::format("the outputs' names and link targets exceed {} bytes",
                                     limits_.max_name_bytes));
    items_.push_back(std::move(item));
    return ok_status();
  }

  Status record_file(int dirfd, const std::string& name, const struct stat& st, Item& item) {
    auto key = std::make_pair(st.st_dev, st.st_ino);
    if (st.st_nlink > 1) {
      auto it = inodes_.find(key);
      if (it != inodes_.end()) {  // another name of an inode already hashed: counted once
        item.inode = it->second;
        return ok_status();
      }
    }
    // The allowance is judged before anything is read, by the larger of the apparent size and
    // the allocated blocks: a sparse file of 200 GB is refused without reading a byte of it.
    uint64_t apparent = static_cast<uint64_t>(st.st_size);
    uint64_t charged = std::max(apparent, static_cast<uint64_t>(st.st_blocks) * 512);
    if (charged > limits_.max_bytes || walk_.bytes > limits_.max_bytes - charged)
      return Error::make(fmt::format(
          "the outputs exceed limits.result_max_bytes ({} bytes): {} has an apparent size of {} "
          "bytes ({} allocated) after {} bytes of other outputs; it was not hashed",
          limits_.max_bytes, shown(path_), apparent, static_cast<uint64_t>(st.st_blocks) * 512,
          walk_.bytes));
    walk_.bytes += apparent;
    auto file = open_regular_at(dirfd, name, shown(path_), &st);
    ++walk_.stats.opens;
    if (!file) return std::move(file).error().context("hash output");
    auto digest = SEALRUN_TRY(hash_opened(*file));
    if (interrupted_) return ok_status();
    item.inode = digests_.size();
    digests_.push_back({std::move(digest), apparent});
    if (st.st_nlink > 1) inodes_.emplace(key, item.inode);
    return ok_status();
  }

  // SHA-256 of an opened regular file, asking `stop` between chunks; the file must be the same
  // (inode, size, mtime, ctime) after the read as when it was opened.
  Result<std::string> hash_opened(const OpenedRegularFile& file) {
    (void)::posix_fadvise(file.fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
    const uint64_t size = static_cast<uint64_t>(file.st.st_size);
    uint64_t done = 0;
    while (done < size) {
      check_stop();
      if (interrupted_) {
        (void)sha_.finish();  // leaves the context clean
        return std::string();
      }
      size_t want = static_cast<size_t>(std::min<uint64_t>(kChunkBytes, size - done));
      ssize_t n = retry_eintr([&] { return ::read(file.fd.get(), buffer_.get(), want); });
      if (n < 0) return Error::from_errno("read output " + shown(path_));
      if (n == 0) break;
      sha_.update(buffer_.get(), static_cast<size_t>(n));
      done += static_cast<uint64_t>(n);
      walk_.stats.bytes_hashed += static_cast<uint64_t>(n);
      report_progress();
    }
    ++walk_.stats.files_hashed;
    report_progress();
    std::string hex = sha_.finish_hex();
    auto after = SEALRUN_TRY(fstat_fd(file.fd.get(), shown(path_)));
    if (done != size || !same_content_identity(file.st, after))
      return Error::make("the output " + shown(path_) + " changed while it was hashed");
    return hex;
  }

  void report_progress() {
    if (!progress_) return;
    HashProgress p;
    p.files_found = p.files_done = walk_.stats.files_hashed;
    p.bytes_found = p.bytes_done = walk_.stats.bytes_hashed;
    progress_(p);
  }

  OutputWalk finish_interrupted() {
    walk_.interrupted = fmt::format("{} (after {} entries and {} bytes hashed)", *interrupted_,
                                    walk_.stats.entries, walk_.stats.bytes_hashed);
    walk_.outputs.clear();
    return std::move(walk_);
  }

  // Sorts by raw path bytes and names each hard link after the first path of its inode.
  void finish() {
    std::sort(items_.begin(), items_.end(),
              [](const Item& a, const Item& b) { return a.record.path < b.record.path; });
    std::vector<const std::string*> first(digests_.size(), nullptr);
    walk_.outputs.reserve(items_.size());
    for (auto& item : items_) {
      if (item.inode != SIZE_MAX) {
        const InodeDigest& d = digests_[item.inode];
        item.record.sha256 = d.sha256;
        item.record.size = d.size;
        if (first[item.inode] == nullptr)
          first[item.inode] = &item.record.path;
        else
          item.record.hardlink_of = *first[item.inode];
      }
    }
    for (auto& item : items_) walk_.outputs.push_back(std::move(item.record));
  }

  const OutputLimits& limits_;
  const StopCheck& stop_;
  const OutputProgress& progress_;
  std::unique_ptr<char[]> buffer_;
  Sha256 sha_;
  std::string path_;  // of the entry at hand, relative to the root
  uint64_t name_bytes_ = 0;
  std::vector<Item> items_;
  std::vector<InodeDigest> digests_;
  std::map<std::pair<dev_t, ino_t>, size_t> inodes_;
  std::optional<std::string> interrupted_;
  OutputWalk walk_;
};

}  // namespace

Result<OutputWalk> walk_outputs(const std::string& root, const OutputLimits& limits,
                                const StopCheck& stop, const OutputProgress& progress) {
  Walker walker(limits, stop, progress);
  return walker.run(root);
}

}  // namespace sealrun::run
