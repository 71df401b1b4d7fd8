// SPDX-License-Identifier: Apache-2.0
// Race-checked hashing of one regular file (file_hash.h). The identity check compares
// (dev, ino, size, mtime_ns, ctime_ns) from fstat(2) on the same descriptor before and after the
// read. On kernels with multigrain timestamps (6.13+, ext4/xfs/btrfs/tmpfs) a write after our first
// fstat always gets a distinct fine-grained ctime, so even a same-size rewrite within one clock
// tick is seen; on older kernels such a rewrite inside one tick (~4 ms) can only be caught by size.
#include "fingerprint/file_hash.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/hex.h"
#include "core/syscall.h"
#include "fingerprint/mapped_hash.h"

namespace sealrun {
namespace {

const char* kind_name(mode_t mode) {
  if (S_ISREG(mode)) return "regular file";
  if (S_ISDIR(mode)) return "directory";
  if (S_ISLNK(mode)) return "symlink";
  if (S_ISFIFO(mode)) return "FIFO";
  if (S_ISSOCK(mode)) return "socket";
  if (S_ISCHR(mode)) return "character device";
  if (S_ISBLK(mode)) return "block device";
  return "file of unknown type";
}

Error not_regular(const std::string& display, mode_t mode) {
  if (S_ISLNK(mode))
    return Error::make(fmt::format(
        "{} is a symlink; sealrun never follows symlinks: name the file it points to", display));
  return Error::make(fmt::format("{} is a {}, not a regular file; only regular files can be hashed",
                                 display, kind_name(mode)));
}

bool same_identity(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino && a.st_size == b.st_size &&
         a.st_mtim.tv_sec == b.st_mtim.tv_sec && a.st_mtim.tv_nsec == b.st_mtim.tv_nsec &&
         a.st_ctim.tv_sec == b.st_ctim.tv_sec && a.st_ctim.tv_nsec == b.st_ctim.tv_nsec;
}

std::string describe_change(const struct stat& a, const struct stat& b) {
  if (a.st_dev != b.st_dev || a.st_ino != b.st_ino) return "it was replaced by another file";
  if (a.st_size != b.st_size) return fmt::format("size {} -> {}", a.st_size, b.st_size);
  if (a.st_mtim.tv_sec != b.st_mtim.tv_sec || a.st_mtim.tv_nsec != b.st_mtim.tv_nsec)
    return "its modification time changed";
  return "its status-change time changed";
}

}  // namespace

Result<OpenedRegularFile> open_regular_at(int dirfd, const std::string& name,
                                          const std::string& display, const struct stat* walked) {
  struct stat lst {};
  if (walked == nullptr) {
    if (::fstatat(dirfd, name.c_str(), &lst, AT_SYMLINK_NOFOLLOW) != 0)
      return Error::from_errno(fmt::format("stat {}", display));
    walked = &lst;
  }
  if (!S_ISREG(walked->st_mode)) return not_regular(display, walked->st_mode);

  int fd = retry_eintr([&] {
    return ::openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
  });
  if (fd < 0) {
    // ELOOP under O_NOFOLLOW: the name became a symlink since it was looked at.
    if (errno == ELOOP) return not_regular(display, S_IFLNK);
    return Error::from_errno(fmt::format("open {}", display));
  }
  return adopt_opened_regular(UniqueFd(fd), display, walked->st_dev, walked->st_ino);
}

Result<OpenedRegularFile> adopt_opened_regular(UniqueFd fd, const DisplayName& display, dev_t dev,
                                               ino_t ino) {
  OpenedRegularFile file{std::move(fd), {}};
  if (::fstat(file.fd.get(), &file.st) != 0)
    return Error::from_errno(fmt::format("fstat {}", display.str()));
  if (!S_ISREG(file.st.st_mode)) return not_regular(display.str(), file.st.st_mode);
  if (file.st.st_dev != dev || file.st.st_ino != ino)
    return Error::make(fmt::format(
        "{} was replaced while it was being opened; hash it again once it is no longer changing",
        display.str()));
  return file;
}

FileHasher::FileHasher(bool map_region)
    : buffer_(std::make_unique_for_overwrite<char[]>(kChunkBytes)),
      region_(map_region ? std::make_unique<MapRegion>() : nullptr) {}

Result<uint64_t> FileHasher::read_into_digest(int fd, uint64_t size, const DisplayName& display,
                                              const AfterFirstChunkHook& hook) {
  uint64_t total = 0;
  bool first_chunk = true;
  last_read_missed_cache_ = false;
  // Stop once the size fstat reported is read: the identity check afterwards catches a file that
  // grew meanwhile, so the read(2) that would only confirm EOF is not needed. An empty file still
  // gets one read, since a pseudo-file (procfs) reports 0 and yet has bytes.
  while (total < size || total == 0) {
    ssize_t n = -1;
    if (first_chunk) {
      // The first read tries RWF_NOWAIT: EAGAIN instead of waiting for the disk tells the pool
      // that reads are missing the page cache (it then asks for readahead on the files it opens
      // next), at no cost for a cached file. Any other refusal of the flag (EOPNOTSUPP on a file
      // system without non-blocking reads) just means reading the ordinary way.
      struct iovec iov {
        buffer_.get(), kChunkBytes
      };
      n = retry_eintr([&] { return ::preadv2(fd, &iov, 1, -1, RWF_NOWAIT); });
      if (n < 0) last_read_missed_cache_ = errno == EAGAIN;
    }
    if (n < 0) n = retry_eintr([&] { return ::read(fd, buffer_.get(), kChunkBytes); });
    if (n < 0) return Error::from_errno(fmt::format("read {}", display.str()));
    if (n == 0) break;
    sha_.update(buffer_.get(), static_cast<size_t>(n));
    total += static_cast<uint64_t>(n);
    if (first_chunk) {
      first_chunk = false;
      if (hook) hook();
    }
  }
  return total;
}

Result<FileDigest> FileHasher::hash_opened(const OpenedRegularFile& file,
                                           const DisplayName& display,
                                           const AfterFirstChunkHook& hook,
                                           std::atomic<uint64_t>* progress_bytes) {
  auto digest = SEALRUN_TRY(hash_opened_raw(file, display, hook, progress_bytes));
  return FileDigest{to_hex(digest.raw.data(), digest.raw.size()), digest.bytes, digest.raw};
}

Result<RawFileDigest> FileHasher::hash_opened_raw(const OpenedRegularFile& file,
                                                  const DisplayName& display,
                                                  const AfterFirstChunkHook& hook,
                                                  std::atomic<uint64_t>* progress_bytes) {
  const int fd = file.fd.get();
  const uint64_t size = static_cast<uint64_t>(file.st.st_size);
  Result<uint64_t> hashed = size;
  uint64_t reported = 0;  // bytes already added to *progress_bytes
  if (size >= map_threshold()) {
    last_read_missed_cache_ = false;
    Status mapped =
        hash_mapped(fd, size, sha_, display, kChunkBytes, hook, progress_bytes, region_.get());
    if (!mapped.ok() && mapped.error().err() == ENODEV)
      hashed = read_into_digest(fd, size, display, hook);  // cannot be mapped: nothing hashed yet
    else if (!mapped.ok())
      hashed = std::move(mapped).error();
    else
      reported = size;
  } else {
    hashed = read_into_digest(fd, size, display, hook);
  }
  if (hashed.ok() && progress_bytes != nullptr && *hashed > reported)
    progress_bytes->fetch_add(*hashed - reported, std::memory_order_relaxed);
  if (!hashed.ok()) {
    (void)sha_.finish();  // leave the context clean for the next file
    return std::move(hashed).error();
  }
  const RawFileDigest digest{*hashed, sha_.finish()};

  struct stat after {};
  if (::fstat(fd, &after) != 0) return Error::from_errno(fmt::format("fstat {}", display.str()));
  if (!same_identity(file.st, after))
    return Error::make(fmt::format(
        "{} changed while it was being hashed ({}); hash it again once it is no longer written to",
        display.str(), describe_change(file.st, after)));
  // Same identity but a different length read: not a plain file (e.g. procfs reports size 0).
  if (digest.bytes != static_cast<uint64_t>(after.st_size))
    return Error::make(
        fmt::format("{} gave {} bytes but reports a size of {}; only ordinary files can be hashed",
                    display.str(), digest.bytes, after.st_size));
  return digest;
}

Result<FileDigest> hash_file_at(int dirfd, const std::string& path,
                                const AfterFirstChunkHook& hook) {
  auto file = SEALRUN_TRY(open_regular_at(dirfd, path, path));
  FileHasher hasher;
  return hasher.hash_opened(file, path, hook);
}

}  // namespace sealrun
