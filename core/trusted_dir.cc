// SPDX-License-Identifier: Apache-2.0
// The StrictModes walk: see trusted_dir.h.
#include "core/trusted_dir.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <pwd.h>
#include <unistd.h>

#include <deque>
#include <filesystem>
#include <vector>

#include "core/syscall.h"

namespace sealrun {

namespace {

constexpr int kMaxLinks = 40;  // as the kernel's own MAXSYMLINKS

std::string owner_name(uid_t uid) {
  struct passwd pw {};
  struct passwd* found = nullptr;
  std::vector<char> buf(4096);
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr)
    return fmt::format("uid {} ({})", uid, pw.pw_name);
  return fmt::format("uid {}", uid);
}

std::string trusted_owners() {
  return ::geteuid() == 0 ? "root" : fmt::format("root or you ({})", owner_name(::geteuid()));
}

}  // namespace

std::deque<std::string> path_components(const std::string& path) {
  std::deque<std::string> out;
  size_t start = 0;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string::npos) slash = path.size();
    if (slash > start) out.push_back(path.substr(start, slash - start));
    start = slash + 1;
  }
  return out;
}

namespace {

std::string parent_of(const std::string& walked) {
  size_t slash = walked.rfind('/');
  return slash == std::string::npos || slash == 0 ? "" : walked.substr(0, slash);
}

}  // namespace

bool is_trusted_owner(uid_t uid) { return uid == 0 || uid == ::geteuid(); }

Status check_trusted_dir(const struct stat& st, const std::string& what, bool ancestor) {
  if (!S_ISDIR(st.st_mode)) return Error::make(fmt::format("{} is not a directory", what));
  unsigned mode = st.st_mode & 07777;
  if (!is_trusted_owner(st.st_uid))
    return Error::make(fmt::format(
        "{} belongs to {} (mode {:04o}); it must belong to {}, because its owner can replace "
        "anything below it with a link to somewhere else: `chown root {}`, or choose a "
        "directory that only {} can write",
        what, owner_name(st.st_uid), mode, trusted_owners(), what, trusted_owners()));
  bool others_write = (mode & 002) != 0;
  bool group_write = (mode & 020) != 0;
  // With the sticky bit (as /tmp) nobody can rename or remove an entry they do not own.
  bool sticky_ancestor = ancestor && (mode & S_ISVTX) != 0;
  if ((group_write || others_write) && !sticky_ancestor)
    return Error::make(fmt::format(
        "{} has mode {:04o}: {} can write it, and could replace anything below it with a link "
        "to somewhere else; `chmod go-w {}`{}",
        what, mode, others_write ? "everyone" : "its group", what,
        ancestor ? " (a directory that everyone must write needs the sticky bit, as /tmp)" : ""));
  return ok_status();
}

Result<TrustedDir> open_trusted_dir(const std::string& given, bool create, mode_t mode) {
  std::string path = std::filesystem::absolute(given).lexically_normal().string();
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  std::deque<std::string> todo = path_components(path);
  auto root = SEALRUN_TRY(open_at(AT_FDCWD, "/", O_PATH | O_DIRECTORY));
  SEALRUN_TRY(check_trusted_dir(SEALRUN_TRY(fstat_fd(root.get(), "/")), "/", true));
  UniqueFd cur = std::move(root);
  std::string walked;  // the real directories walked so far, for messages
  int links = 0;
  if (todo.empty()) {  // "/" itself
    auto fd = SEALRUN_TRY(open_at(AT_FDCWD, "/", O_RDONLY | O_DIRECTORY));
    return TrustedDir{std::move(fd), "/"};
  }
  while (!todo.empty()) {
    std::string name = todo.front();
    todo.pop_front();
    bool last = todo.empty();
    if (name == ".") continue;
    if (name == "..") {  // only from a link's target: the path itself was made normal
      cur = SEALRUN_TRY(open_at(cur.get(), "..", O_PATH | O_DIRECTORY));
      walked = parent_of(walked);
      std::string shown = walked.empty() ? "/" : walked;
      SEALRUN_TRY(check_trusted_dir(SEALRUN_TRY(fstat_fd(cur.get(), shown)), shown, !last));
      if (last) {
        auto fd = SEALRUN_TRY(open_at(cur.get(), ".", O_RDONLY | O_DIRECTORY));
        return TrustedDir{std::move(fd), path};
      }
      continue;
    }
    std::string here = walked + "/" + name;
    struct stat lst {};
    if (::fstatat(cur.get(), name.c_str(), &lst, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno != ENOENT || !last || !create) return Error::from_errno(fmt::format("{}", here));
      if (::mkdirat(cur.get(), name.c_str(), mode) != 0 && errno != EEXIST)
        return Error::from_errno(fmt::format("mkdir {}", here));
      if (::fstatat(cur.get(), name.c_str(), &lst, AT_SYMLINK_NOFOLLOW) != 0)
        return Error::from_errno(fmt::format("{}", here));
    }
    if (S_ISLNK(lst.st_mode)) {
      if (++links > kMaxLinks)
        return Error::make(fmt::format("{}: more than {} symlinks on the way", path, kMaxLinks));
      if (!is_trusted_owner(lst.st_uid))
        return Error::make(fmt::format(
            "{} is a symlink that belongs to {}; it is not followed, because its owner can "
            "re-point it; give the real path",
            here, owner_name(lst.st_uid)));
      std::vector<char> buf(4096);
      ssize_t n = ::readlinkat(cur.get(), name.c_str(), buf.data(), buf.size() - 1);
      if (n <= 0) return Error::from_errno(fmt::format("readlink {}", here));
      std::string target(buf.data(), static_cast<size_t>(n));
      std::deque<std::string> more = path_components(target);
      todo.insert(todo.begin(), more.begin(), more.end());
      if (target[0] == '/') {
        cur = SEALRUN_TRY(open_at(AT_FDCWD, "/", O_PATH | O_DIRECTORY));
        walked.clear();
      }
      if (todo.empty()) {  // a link to "/"
        auto fd = SEALRUN_TRY(open_at(cur.get(), ".", O_RDONLY | O_DIRECTORY));
        return TrustedDir{std::move(fd), path};
      }
      continue;
    }
    auto fd = SEALRUN_TRY(
        open_at(cur.get(), name, (last ? O_RDONLY : O_PATH) | O_DIRECTORY | O_NOFOLLOW));
    // Checked on the descriptor: what is checked is what is used.
    SEALRUN_TRY(check_trusted_dir(SEALRUN_TRY(fstat_fd(fd.get(), here)), here, !last));
    cur = std::move(fd);
    walked = here;
  }
  return TrustedDir{std::move(cur), path};
}

}  // namespace sealrun
