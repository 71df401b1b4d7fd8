// SPDX-License-Identifier: Apache-2.0
// What the digest cache remembers about a hashed file, and how it tells whether that memory still
// holds: the file system's identity, the inode's stat fields (nanoseconds), and the moment the
// file was hashed. Pure values and one pure rule (stamp_still_holds), shared by the walk, which
// records stamps, and the cache, which stores and compares them (docs/digest-cache.md).
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <ctime>

namespace sealrun {

// What an inventory record describes (semantic-tree-v1 records nothing else).
enum class EntryKind : uint8_t { kFile = 0, kDirectory = 1, kSymlink = 2 };

// Which file system an entry lives on. st_dev alone is not enough: the kernel recycles anonymous
// device numbers (tmpfs, overlayfs, btrfs subvolumes), so another file system can later appear
// under the same st_dev with the same inode numbers. statfs(2)'s f_fsid tells such file systems
// apart: ext4, xfs and btrfs derive it from the file system's UUID (so it also survives a reboot,
// unlike a mount id), and tmpfs from a UUID drawn at each mount. f_type says which kind of file
// system it is, which decides whether its ctime can be trusted at all (ctime_is_trustworthy).
struct FsIdentity {
  uint64_t dev = 0;   // st_dev
  uint64_t fsid = 0;  // statfs f_fsid, both words
  uint64_t type = 0;  // statfs f_type (a *_SUPER_MAGIC)
  bool operator==(const FsIdentity&) const = default;
};

// The identity of one entry at the moment it was read: a regular file's when it was hashed, a
// symlink's when its target was read, a directory's when it was opened.
struct FileStamp {
  uint64_t ino = 0;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  // CLOCK_REALTIME_COARSE read before the entry was opened (or its symlink target read): the clock
  // the kernel stamps ctime from, so a change after this moment gets a ctime at or after it.
  int64_t hashed_at_ns = 0;
};

inline int64_t timespec_ns(const struct timespec& ts) {
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Now on the coarse real-time clock, in nanoseconds since the epoch.
int64_t coarse_realtime_ns();

// True for file systems whose ctime changes on every change to a file and cannot be set by a
// user: ext2/3/4, xfs, btrfs, tmpfs, f2fs, overlayfs. Elsewhere (vfat reports the creation time as
// ctime, squashfs its image's mtime, network file systems the server's view) files are always
// re-hashed.
bool ctime_is_trustworthy(uint64_t fs_type);

// The racy-index rule (as git's): a stamp is trusted only if the file's last change (ctime) lies
// before the whole second in which it was hashed. A change after the hashing began gets a ctime at
// or after that second on every granularity from 1 ns to 1 s, so it can never equal the stored
// one; a file changed in the same second as its hashing is simply hashed again next time.
inline bool stamp_is_settled(const FileStamp& s) {
  const int64_t second_ns = s.hashed_at_ns - s.hashed_at_ns % 1'000'000'000;
  return s.ctime_ns < second_ns;
}

// The stamp a stat gives, read at `read_at` (0 where the moment does not matter).
inline FileStamp stamp_of(const struct stat& st, int64_t read_at = 0) {
  return FileStamp{static_cast<uint64_t>(st.st_ino), static_cast<uint64_t>(st.st_size),
                   timespec_ns(st.st_mtim), timespec_ns(st.st_ctim), read_at};
}
// Whether two stamps describe the same inode in the same state (the moments aside).
inline bool same_inode_state(const FileStamp& a, const FileStamp& b) {
  return a.ino == b.ino && a.size == b.size && a.mtime_ns == b.mtime_ns && a.ctime_ns == b.ctime_ns;
}
// Whether `cached` (a settled stamp taken on `cached_fs`) still describes the file whose lstat is
// `now` on `now_fs`: same file system, inode, size, mtime and ctime to the nanosecond.
// The same for an lstat kept as a stamp (its hashed_at_ns plays no part).
inline bool stamp_still_holds(const FileStamp& cached, const FsIdentity& cached_fs,
                              const FileStamp& now, const FsIdentity& now_fs) {
  return cached_fs == now_fs && ctime_is_trustworthy(now_fs.type) && stamp_is_settled(cached) &&
         same_inode_state(cached, now);
}
inline bool stamp_still_holds(const FileStamp& cached, const FsIdentity& cached_fs,
                              const struct stat& now, const FsIdentity& now_fs) {
  return stamp_still_holds(cached, cached_fs, stamp_of(now), now_fs);
}

}  // namespace sealrun
