// SPDX-License-Identifier: Apache-2.0
// copy_result_tree(): see result_copy.h.
#include "controller/run/result_copy.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/syscall.h"
#include "core/unique_fd.h"
#include "fingerprint/dir_listing.h"

namespace sealrun::run {
namespace {

constexpr size_t kBufferBytes = 1 << 20;

struct Identity {
  dev_t dev = 0;
  ino_t ino = 0;
  bool operator==(const Identity& o) const { return dev == o.dev && ino == o.ino; }
};

Identity identity_of(const struct stat& st) { return {st.st_dev, st.st_ino}; }

// One directory on the way down: its names (read once, whole), the next to copy, and what is
// needed to climb back to it and to give it its metadata when it is done.
struct Level {
  NameList names;
  size_t next = 0;
  struct stat from {};  // the job's directory
  Identity to;          // ours
  std::string shown;    // its path relative to /out, for errors (possibly shortened)
};

// A copy of a file whose other names are still to come: a handle to it (open_by_handle_at needs no
// path, so a link deep in the tree costs nothing special).
struct Handle {
  std::vector<char> bytes;
};

class Copier {
 public:
  // The buffer grows to what the largest file copied needs (at most kBufferBytes): outputs of a
  // few bytes need no megabyte cleared and faulted in.
  Copier(const StopCheck& stop, CopyStats* stats) : stop_(stop), stats_(stats) {}

  Status run(int from_root, int to_root, size_t max_depth, size_t max_entries) {
    UniqueFd from(::fcntl(from_root, F_DUPFD_CLOEXEC, 0));
    UniqueFd to(::fcntl(to_root, F_DUPFD_CLOEXEC, 0));
    if (!from || !to) return Error::from_errno("copy the outputs: dup");
    to_root_ = to_root;
    std::vector<Level> stack;
    SEALRUN_TRY(enter(from.get(), to.get(), "", stack));
    while (!stack.empty()) {
      Level& top = stack.back();
      if (top.next < top.names.starts.size()) {
        const char* name = top.names.at(top.next++);
        std::string shown = top.shown.empty() ? name : top.shown + "/" + name;
        if (shown.size() > 512) shown = "…" + shown.substr(shown.size() - 500);
        if (stop_)
          if (auto why = stop_()) return Error::make("copy the outputs: interrupted: " + *why);
        if (stats_->entries >= max_entries) {
          // Enough to show the walk there are too many; the directories entered keep the
          // job's modes unset (ours, 0700), which is fine for a tree that is refused.
          stats_->cut_short = true;
          return ok_status();
        }
        struct stat st {};
        if (::fstatat(from.get(), name, &st, AT_SYMLINK_NOFOLLOW) != 0)
          return Error::from_errno("copy the outputs: stat " + shown);
        ++stats_->entries;
        if (!S_ISDIR(st.st_mode)) {
          SEALRUN_TRY(copy_entry(from.get(), to.get(), name, st, shown));
          continue;
        }
        if (stack.size() >= max_depth)
          return Error::make(fmt::format("copy the outputs: {} is nested deeper than {} levels",
                                         shown, max_depth));
        if (::mkdirat(to.get(), name, 0700) != 0)
          return Error::from_errno("copy the outputs: mkdir " + shown);
        auto child_from = SEALRUN_TRY_CTX(
            open_at(from.get(), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW), "copy the outputs");
        auto child_to = SEALRUN_TRY_CTX(
            open_at(to.get(), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW), "copy the outputs");
        auto opened = SEALRUN_TRY(fstat_fd(child_from.get(), shown));
        if (!(identity_of(opened) == identity_of(st)))
          return Error::make("copy the outputs: " + shown + " changed while it was copied");
        from = std::move(child_from);
        to = std::move(child_to);
        SEALRUN_TRY(enter(from.get(), to.get(), shown, stack));
        continue;
      }
      // Done with this directory: its own metadata last (creating entries changed its times).
      SEALRUN_TRY(set_metadata(to.get(), top.from, top.shown.empty() ? "/out" : top.shown));
      stack.pop_back();
      if (stack.empty()) break;
      from = SEALRUN_TRY(climb(from.get(), identity_of(stack.back().from), stack.back().shown));
      to = SEALRUN_TRY(climb(to.get(), stack.back().to, stack.back().shown));
    }
    return ok_status();
  }

 private:
  Status enter(int from, int to, const std::string& shown, std::vector<Level>& stack) {
    Level level;
    level.from = SEALRUN_TRY(fstat_fd(from, shown));
    level.to = identity_of(SEALRUN_TRY(fstat_fd(to, shown)));
    level.shown = shown;
    SEALRUN_TRY_CTX(list_names(from, true, shown.empty() ? "/out" : shown, listing_, level.names),
                    "copy the outputs");
    stack.push_back(std::move(level));
    return ok_status();
  }

  static Result<UniqueFd> climb(int fd, const Identity& expected, const std::string& shown) {
    auto up = SEALRUN_TRY_CTX(open_at(fd, "..", O_RDONLY | O_DIRECTORY), "copy the outputs");
    auto st = SEALRUN_TRY(fstat_fd(up.get(), ".."));
    if (!(identity_of(st) == expected))
      return Error::make("copy the outputs: the parent of " + shown + " is not the one entered");
    return up;
  }

  static Status set_metadata(int fd, const struct stat& st, const std::string& shown) {
    // Owner first: chown clears set-id bits, and the mode is the job's as it left it.
    if (::fchown(fd, st.st_uid, st.st_gid) != 0 || ::fchmod(fd, st.st_mode & 07777) != 0)
      return Error::from_errno("copy the outputs: owner and mode of " + shown);
    struct timespec times[2] = {st.st_atim, st.st_mtim};
    if (::futimens(fd, times) != 0) return Error::from_errno("copy the outputs: times of " + shown);
    return ok_status();
  }

  Status copy_entry(int from, int to, const char* name, const struct stat& st,
                    const std::string& shown) {
    if (st.st_nlink > 1) {
      auto seen = links_.find(st.st_ino);
      if (seen != links_.end()) return link_again(seen->second, to, name, shown);
    }
    if (S_ISREG(st.st_mode)) {
      SEALRUN_TRY(copy_file(from, to, name, st, shown));
    } else if (S_ISLNK(st.st_mode)) {
      auto target = SEALRUN_TRY_CTX(read_link_at(from, name, st, shown), "copy the outputs");
      if (::symlinkat(target.c_str(), to, name) != 0)
        return Error::from_errno("copy the outputs: symlink " + shown);
      if (::fchownat(to, name, st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW) != 0)
        return Error::from_errno("copy the outputs: owner of " + shown);
      struct timespec times[2] = {st.st_atim, st.st_mtim};
      if (::utimensat(to, name, times, AT_SYMLINK_NOFOLLOW) != 0)
        return Error::from_errno("copy the outputs: times of " + shown);
    } else if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) {
      if (::mknodat(to, name, (st.st_mode & S_IFMT) | 0600, 0) != 0)
        return Error::from_errno("copy the outputs: mknod " + shown);
      auto fd = SEALRUN_TRY_CTX(open_at(to, name, O_PATH | O_NOFOLLOW), "copy the outputs");
      // Through /proc's view of the O_PATH descriptor: neither opens the FIFO nor follows a name.
      std::string self = fmt::format("/proc/self/fd/{}", fd.get());
      struct timespec times[2] = {st.st_atim, st.st_mtim};
      if (::fchownat(fd.get(), "", st.st_uid, st.st_gid, AT_EMPTY_PATH) != 0 ||
          ::chmod(self.c_str(), st.st_mode & 07777) != 0 ||
          ::utimensat(AT_FDCWD, self.c_str(), times, 0) != 0)
        return Error::from_errno("copy the outputs: metadata of " + shown);
    } else {
      return Error::make(fmt::format(
          "copy the outputs: {} is a device node (mode {:o}); a job cannot make one, so it is "
          "refused",
          shown, st.st_mode));
    }
    if (st.st_nlink > 1) remember(to, name, st.st_ino);
    return ok_status();
  }

  Status copy_file(int from, int to, const char* name, const struct stat& st,
                   const std::string& shown) {
    auto in =
        SEALRUN_TRY_CTX(open_at(from, name, O_RDONLY | O_NOFOLLOW | O_NOCTTY), "copy the outputs");
    auto opened = SEALRUN_TRY(fstat_fd(in.get(), shown));
    if (!(identity_of(opened) == identity_of(st)))
      return Error::make("copy the outputs: " + shown + " changed while it was copied");
    auto out = SEALRUN_TRY_CTX(open_at(to, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600),
                               "copy the outputs");
    off_t pos = 0;
    const off_t size = opened.st_size;
    while (pos < size) {
      off_t data = ::lseek(in.get(), pos, SEEK_DATA);
      if (data < 0 && errno == ENXIO) break;  // only a hole is left
      if (data < 0) return Error::from_errno("copy the outputs: seek in " + shown);
      off_t hole = ::lseek(in.get(), data, SEEK_HOLE);
      if (hole < 0) return Error::from_errno("copy the outputs: seek in " + shown);
      SEALRUN_TRY(copy_range(in.get(), out.get(), data, std::min(hole, size), shown));
      pos = hole;
    }
    if (::ftruncate(out.get(), size) != 0)
      return Error::from_errno("copy the outputs: size of " + shown);
    return set_metadata(out.get(), opened, shown);
  }

  Status copy_range(int in, int out, off_t begin, off_t end, const std::string& shown) {
    off_t at = begin;
    size_t need = static_cast<size_t>(std::min<off_t>(end - begin, kBufferBytes));
    if (buffer_.size() < need) buffer_.resize(need);
    while (at < end) {
      size_t want = static_cast<size_t>(std::min<off_t>(end - at, kBufferBytes));
      ssize_t n = ::pread(in, buffer_.data(), want, at);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Error::from_errno("copy the outputs: read " + shown);
      if (n == 0) break;  // shorter than it said: what is there is copied
      SEALRUN_TRY(pwrite_all(out, static_cast<size_t>(n), at, shown));
      at += n;
      stats_->bytes += static_cast<uint64_t>(n);
    }
    return ok_status();
  }

  Status pwrite_all(int out, size_t n, off_t at, const std::string& shown) {
    size_t done = 0;
    while (done < n) {
      ssize_t w = ::pwrite(out, buffer_.data() + done, n - done, at + static_cast<off_t>(done));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return Error::from_errno("copy the outputs: write " + shown);
      done += static_cast<size_t>(w);
    }
    return ok_status();
  }

  // The copy's handle, so that the inode's next name becomes a link to it. Without one (a file
  // system that has no handles), the next name becomes a copy of its own: nothing is lost.
  void remember(int to, const char* name, ino_t ino) {
    std::vector<char> raw(sizeof(struct file_handle) + MAX_HANDLE_SZ);
    auto* fh = reinterpret_cast<struct file_handle*>(raw.data());
    fh->handle_bytes = MAX_HANDLE_SZ;
    int mount_id = 0;
    if (::name_to_handle_at(to, name, fh, &mount_id, 0) != 0) return;
    raw.resize(sizeof(struct file_handle) + fh->handle_bytes);
    links_[ino] = Handle{std::move(raw)};
  }

  Status link_again(Handle& h, int to, const char* name, const std::string& shown) {
    auto* fh = reinterpret_cast<struct file_handle*>(h.bytes.data());
    UniqueFd first(::open_by_handle_at(to_root_, fh, O_PATH | O_CLOEXEC));
    if (!first) return Error::from_errno("copy the outputs: find the first name of " + shown);
    if (::linkat(first.get(), "", to, name, AT_EMPTY_PATH) != 0)
      return Error::from_errno("copy the outputs: link " + shown);
    return ok_status();
  }

  const StopCheck& stop_;
  CopyStats* stats_;
  int to_root_ = -1;
  std::vector<char> buffer_;
  std::vector<char> listing_;
  std::map<ino_t, Handle> links_;
};

}  // namespace

Status copy_result_tree(int from_dirfd, int to_dirfd, const StopCheck& stop, CopyStats* stats,
                        size_t max_depth, size_t max_entries) {
  CopyStats local;
  Copier copier(stop, stats ? stats : &local);
  return copier.run(from_dirfd, to_dirfd, max_depth, max_entries);
}

}  // namespace sealrun::run
