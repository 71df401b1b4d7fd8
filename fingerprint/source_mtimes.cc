// SPDX-License-Identifier: Apache-2.0
// list_mtimes(), the canonical listing and stamp_tree_times(): see source_mtimes.h.
#include "fingerprint/source_mtimes.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>

#include "core/syscall.h"
#include "fingerprint/sha256.h"

namespace sealrun {
namespace {

// The {atime, mtime} an entry is given: both the one epoch, or, without one, atime = the entry's
// own mtime and mtime kept (so reading the copy leaves no trace of when that happened).
std::array<struct timespec, 2> stamped_times(std::optional<int64_t> epoch, const struct stat& st) {
  if (epoch) {
    struct timespec t = {static_cast<time_t>(*epoch), 0};
    return {t, t};
  }
  return {st.st_mtim, {0, UTIME_OMIT}};
}

constexpr int kMtimeDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW;

bool listed_kind(mode_t mode) { return S_ISDIR(mode) || S_ISREG(mode) || S_ISLNK(mode); }

std::string rel_join(const std::string& dir, const std::string& name) {
  return dir == "." ? name : dir + "/" + name;
}

struct MtimeWalker {
  size_t max_entries;
  size_t entries = 0;
  std::string root;

  Status count(const std::string& path) {
    if (++entries > max_entries)
      return Error::make(fmt::format("{}: more than {} entries (at {})", root, max_entries, path));
    return ok_status();
  }

  Status list(int dir, const std::string& rel, std::vector<MtimeEntry>* out) {
    for (const std::string& name : list_dir_names(dir)) {
      std::string path = rel_join(rel, name);
      SEALRUN_TRY(count(path));
      auto st = SEALRUN_TRY(lstat_at(dir, name));
      if (!listed_kind(st.st_mode)) continue;
      out->push_back({path, st.st_mtim});
      if (S_ISDIR(st.st_mode)) {
        auto sub = SEALRUN_TRY(open_at(dir, name, kMtimeDirFlags));
        SEALRUN_TRY(list(sub.get(), path, out));
      }
    }
    return ok_status();
  }

  // Children first, then the entry itself: a directory's times are set after everything in it.
  Status stamp(int dir, const std::string& rel, const std::optional<int64_t>& epoch) {
    for (const std::string& name : list_dir_names(dir)) {
      std::string path = rel_join(rel, name);
      SEALRUN_TRY(count(path));
      auto st = SEALRUN_TRY(lstat_at(dir, name));
      if (!listed_kind(st.st_mode)) continue;
      if (S_ISDIR(st.st_mode)) {
        auto sub = SEALRUN_TRY(open_at(dir, name, kMtimeDirFlags));
        SEALRUN_TRY(stamp(sub.get(), path, epoch));
      }
      std::array<struct timespec, 2> times = stamped_times(epoch, st);
      if (::utimensat(dir, name.c_str(), times.data(), AT_SYMLINK_NOFOLLOW) != 0)
        return Error::from_errno(fmt::format("set the times of {}/{}", root, path));
    }
    return ok_status();
  }
};

}  // namespace

Result<std::vector<MtimeEntry>> list_mtimes(const std::string& root, size_t max_entries) {
  auto fd = SEALRUN_TRY_CTX(open_at(AT_FDCWD, root, kMtimeDirFlags), "mtimes of " + root);
  auto st = SEALRUN_TRY(fstat_fd(fd.get(), root));
  std::vector<MtimeEntry> out = {{".", st.st_mtim}};
  MtimeWalker walker{max_entries, 0, root};
  SEALRUN_TRY_CTX(walker.list(fd.get(), ".", &out), "mtimes of " + root);
  std::sort(out.begin(), out.end(),
            [](const MtimeEntry& a, const MtimeEntry& b) { return a.path < b.path; });
  return out;
}

std::string format_mtime(const struct timespec& t) {
  return fmt::format("{}.{:09}", static_cast<int64_t>(t.tv_sec), static_cast<long>(t.tv_nsec));
}

std::optional<struct timespec> parse_mtime(const std::string& text) {
  size_t dot = text.find('.');
  if (dot == std::string::npos || dot == 0 || text.size() - dot - 1 != 9) return std::nullopt;
  size_t start = text[0] == '-' ? 1 : 0;
  if (start == dot || dot - start > 18) return std::nullopt;
  int64_t sec = 0;
  for (size_t i = start; i < dot; ++i) {
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
    sec = sec * 10 + (text[i] - '0');
  }
  long nsec = 0;
  for (size_t i = dot + 1; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
    nsec = nsec * 10 + (text[i] - '0');
  }
  struct timespec t = {};
  t.tv_sec = static_cast<time_t>(start == 1 ? -sec : sec);
  t.tv_nsec = nsec;
  // One spelling per time: "-0.000000001" is not a time a listing can hold (a negative mtime has
  // tv_sec < 0 and 0 <= tv_nsec < 1e9, so its seconds are never "-0").
  if (start == 1 && sec == 0) return std::nullopt;
  if (format_mtime(t) != text) return std::nullopt;
  return t;
}

std::string mtimes_listing(const std::vector<MtimeEntry>& entries) {
  std::string out;
  for (const MtimeEntry& e : entries) out += e.path + "\t" + format_mtime(e.mtime) + "\n";
  return out;
}

std::string mtimes_digest(const std::vector<MtimeEntry>& entries) {
  return sha256_hex(mtimes_listing(entries));
}

std::optional<std::string> first_mtime_difference(const std::vector<MtimeEntry>& expected,
                                                  const std::vector<MtimeEntry>& observed) {
  size_t i = 0, j = 0;
  while (i < expected.size() || j < observed.size()) {
    if (j == observed.size() || (i < expected.size() && expected[i].path < observed[j].path))
      return fmt::format("{}: absent (expected mtime {})", expected[i].path,
                         format_mtime(expected[i].mtime));
    if (i == expected.size() || observed[j].path < expected[i].path)
      return fmt::format("{}: not listed (mtime {})", observed[j].path,
                         format_mtime(observed[j].mtime));
    std::string want = format_mtime(expected[i].mtime);
    std::string got = format_mtime(observed[j].mtime);
    if (want != got) return fmt::format("{}: mtime {}, expected {}", expected[i].path, got, want);
    ++i;
    ++j;
  }
  return std::nullopt;
}

Status stamp_tree_times(const std::string& root, std::optional<int64_t> epoch, size_t max_entries) {
  auto fd = SEALRUN_TRY_CTX(open_at(AT_FDCWD, root, kMtimeDirFlags), "set the times of " + root);
  auto st = SEALRUN_TRY(fstat_fd(fd.get(), root));
  MtimeWalker walker{max_entries, 0, root};
  SEALRUN_TRY(walker.stamp(fd.get(), ".", epoch));
  std::array<struct timespec, 2> times = stamped_times(epoch, st);
  if (::futimens(fd.get(), times.data()) != 0)
    return Error::from_errno(fmt::format("set the times of {}", root));
  return ok_status();
}

}  // namespace sealrun
