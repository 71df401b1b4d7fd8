// SPDX-License-Identifier: Apache-2.0
// The pin images' cache, build and proofs: see pin_images.h.
#include "controller/run/pin_images.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>

#include "containment/pin_mount.h"
#include "core/bounded_file.h"
#include "core/process.h"
#include "core/syscall.h"
#include "fingerprint/file_hash.h"
#include "fingerprint/sha256.h"
#include "fingerprint/tree.h"

namespace sealrun::run {

namespace {

using nlohmann::json;

constexpr int64_t kMkfsTimeoutMs = 1800 * 1000;  // a /usr-sized tree takes tens of seconds
constexpr size_t kChunk = 1 << 20;

Error mismatch(const std::string& what) { return Error::make(PinMismatch::kPrefix + what); }

std::string find_mkfs_erofs() {
  for (const char* p :
       {"/usr/bin/mkfs.erofs", "/usr/sbin/mkfs.erofs", "/sbin/mkfs.erofs", "/bin/mkfs.erofs"})
    if (::access(p, X_OK) == 0) return p;
  return {};
}

// The stat identity of the image file that vouches for its recorded SHA-256 (as the digest cache's
// stamps do for a tree's files): any write changes ctime, and the cache directory is root's only.
json identity_json(const struct stat& st) {
  return {{"dev", static_cast<uint64_t>(st.st_dev)},
          {"ino", static_cast<uint64_t>(st.st_ino)},
          {"size", static_cast<uint64_t>(st.st_size)},
          {"mtime_ns", st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec},
          {"ctime_ns", st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec}};
}

Result<std::string> hash_fd(int fd, const std::string& what) {
  Sha256 h;
  std::vector<char> buf(kChunk);
  off_t at = 0;
  for (;;) {
    ssize_t n = ::pread(fd, buf.data(), buf.size(), at);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::from_errno("read " + what);
    if (n == 0) break;
    h.update(buf.data(), static_cast<size_t>(n));
    at += n;
  }
  return h.finish_hex();
}

// pins/<key> held shared, or nullopt when `sweep --images` removed it meanwhile (it removes a pin
// only while it holds it exclusively, so one opened before the removal is found unlinked once the
// shared lock is granted): the caller then builds it again.
Result<std::optional<UniqueFd>> lock_held_or_gone(const StateDir& state, const std::string& rel) {
  auto fd = state.open(rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (!fd) {
    if (!state.exists(rel)) return std::optional<UniqueFd>();
    return std::move(fd).error();
  }
  // Blocking: an exclusive holder is a sweep removing it or a run replacing a changed image, each
  // a moment's work.
  if (retry_eintr([&] { return ::flock(fd->get(), LOCK_SH); }) != 0)
    return Error::from_errno("lock " + rel);
  struct stat st {};
  if (::fstat(fd->get(), &st) != 0) return Error::from_errno("stat " + rel);
  if (st.st_nlink == 0) return std::optional<UniqueFd>();
  return std::optional<UniqueFd>(std::move(*fd));
}

// pins/<key>/image.erofs opened read-only and proven to be the image recorded: its identity as
// recorded, or (changed identity, or rehash) its bytes hashed whole against the recorded SHA-256.
Result<PinImage> open_cached(const PinImageRequest& req, const std::string& key) {
  const StateDir& state = *req.state;
  std::string rel = "pins/" + key;
  PinImage out;
  out.key = key;
  out.image = SEALRUN_TRY(state.open(rel + "/image.erofs", O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  auto st = SEALRUN_TRY(fstat_fd(out.image.get(), rel + "/image.erofs"));
  if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 0222) != 0)
    return Error::make(rel + "/image.erofs is not a read-only regular file of ours");
  auto text = read_bounded_file(state.fd(), rel + "/image.json", 4096);
  if (!text) return Error::make(rel + "/image.json is missing or unreadable");
  json record = json::parse(*text, nullptr, false);
  if (!record.is_object() || !record.contains("image_sha256") ||
      !record["image_sha256"].is_string() || !record.contains("identity"))
    return Error::make(rel + "/image.json is not a pin image record");
  out.sha256 = record["image_sha256"].get<std::string>();
  out.bytes = static_cast<uint64_t>(st.st_size);
  if (!req.rehash && record["identity"] == identity_json(st)) return out;
  out.hashed = true;
  std::string now = SEALRUN_TRY(hash_fd(out.image.get(), rel + "/image.erofs"));
  if (now != out.sha256)
    return Error::make(
        fmt::format("{}/image.erofs has SHA-256 {}, not the recorded {}", rel, now, out.sha256));
  return out;
}

Status run_mkfs(const std::string& image, const std::string& dir) {
  std::string mkfs = find_mkfs_erofs();
  if (mkfs.empty()) return Error::make("mkfs.erofs not found (Debian: erofs-utils)");
  SpawnOptions o;
  // Owners, modes and per-file mtimes as on the host: the tree's digest covers the first two.
  o.argv = {mkfs, "--quiet", "--preserve-mtime", image, dir};
  o.env = std::vector<std::string>{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"};
  auto r = SEALRUN_TRY(run_capture(o, kMkfsTimeoutMs, 64 * 1024));
  if (r.timed_out) return Error::make("mkfs.erofs did not finish in time for " + dir);
  if (!r.status.success())
    return Error::make(fmt::format("mkfs.erofs {} failed ({}): {}", dir, r.status.describe(),
                                   r.err.substr(0, 400)));
  return ok_status();
}

using Builder = std::function<Status(const std::string& work, const std::string& image)>;

// Builds into the temporaries with `build` (which proves the image's contents), records the image
// file's SHA-256 and identity, and renames it into pins/<key> whole.
Status build_into_cache(const PinImageRequest& req, const std::string& key, const Builder& build) {
  const StateDir& state = *req.state;
  std::string work = req.temp_dir + "/pin-" + key;
  (void)state.remove_tree(work);  // an earlier attempt of this controller
  SEALRUN_TRY(state.make_dir(work, 0700));
  auto fail = [&](Error e) {
    (void)state.remove_tree(work);
    return e;
  };
  if (auto st = build(work, work + "/image.erofs"); !st) return fail(std::move(st).error());
  auto image = open_at(AT_FDCWD, work + "/image.erofs", O_RDONLY | O_NOFOLLOW);
  if (!image) return fail(std::move(image).error());
  if (::fchmod(image->get(), 0400) != 0) return fail(Error::from_errno("chmod the pin image"));
  auto sha = hash_fd(image->get(), "the new pin image");
  if (!sha) return fail(std::move(sha).error());
  std::string final_path = state.path() + "/pins/" + key;
  if (::rename(work.c_str(), final_path.c_str()) != 0) {
    int err = errno;
    (void)state.remove_tree(work);
    // Another run built the same image first: its record is written or about to be.
    if (err == EEXIST || err == ENOTEMPTY) return ok_status();
    return Error::with_errno(err, "rename " + work + " to " + final_path);
  }
  auto st = SEALRUN_TRY(fstat_fd(image->get(), final_path + "/image.erofs"));
  json record = {{"image_sha256", *sha}, {"identity", identity_json(st)}, {"key", key}};
  return state.write_atomic("pins/" + key + "/image.json", record.dump() + "\n", 0600);
}

Result<PinImage> obtain(const PinImageRequest& req, const std::string& key, const Builder& build) {
  const StateDir& state = *req.state;
  SEALRUN_TRY(state.ensure_subdir("pins", 0700));
  std::string rel = "pins/" + key;
  std::string replaced;
  if (state.exists(rel)) {
    auto lock = SEALRUN_TRY(lock_held_or_gone(state, rel));
    if (lock) {
      auto found = open_cached(req, key);
      if (found) {
        found->lock = std::move(*lock);
        return found;
      }
      replaced = found.error().message();
      // Never used: removed and built again, only when no other run holds it.
      if (::flock(lock->get(), LOCK_EX | LOCK_NB) != 0)
        return Error::make(
            fmt::format("{} must be built again ({}) but is in use by another run", rel, replaced));
      SEALRUN_TRY_CTX(state.remove_tree(rel), "remove the failed " + rel);
    }
  }
  int64_t start = monotonic_ms();
  SEALRUN_TRY(build_into_cache(req, key, build));
  int64_t build_ms = monotonic_ms() - start;
  auto lock = SEALRUN_TRY(lock_pin_dir(state, rel, false));
  PinImage out = SEALRUN_TRY_CTX(open_cached(req, key), "the pin image just built");
  out.lock = std::move(lock);
  out.built = true;
  out.build_ms = build_ms;
  out.replaced = replaced;
  return out;
}

// Makes `dir` and the directories above it below `root_fd` (0755), returning the last one.
Result<UniqueFd> make_parents(int root_fd, const std::string& rel_dir) {
  auto cur = SEALRUN_TRY(open_at(root_fd, ".", O_RDONLY | O_DIRECTORY));
  size_t at = 0;
  while (at < rel_dir.size()) {
    size_t slash = rel_dir.find('/', at);
    std::string name =
        rel_dir.substr(at, slash == std::string::npos ? std::string::npos : slash - at);
    at = slash == std::string::npos ? rel_dir.size() : slash + 1;
    if (name.empty()) continue;
    if (name == "." || name == "..") return Error::make("closure path holds . or ..: " + rel_dir);
    if (::mkdirat(cur.get(), name.c_str(), 0755) != 0 && errno != EEXIST)
      return Error::from_errno("mkdir " + name);
    cur = SEALRUN_TRY(open_at(cur.get(), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW));
  }
  return cur;
}

// Copies the host file `f` to root/<f.path> while hashing it; the copy must have the pinned bytes
// and the mode and owner the key was made with.
Status copy_verified(int root_fd, const ClosureFile& f, const struct stat& keyed) {
  auto in = SEALRUN_TRY(open_regular_at(AT_FDCWD, f.path, f.path));
  if ((in.st.st_mode & 07777) != (keyed.st_mode & 07777) || in.st.st_uid != keyed.st_uid ||
      in.st.st_gid != keyed.st_gid)
    return mismatch(f.path + " changed its mode or owner while its image was made");
  size_t slash = f.path.rfind('/');
  auto dir = SEALRUN_TRY(make_parents(root_fd, f.path.substr(1, slash == 0 ? 0 : slash - 1)));
  std::string name = f.path.substr(slash + 1);
  auto out = SEALRUN_TRY(open_at(dir.get(), name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600));
  Sha256 h;
  std::vector<char> buf(kChunk);
  for (;;) {
    ssize_t n = ::read(in.fd.get(), buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::from_errno("read " + f.path);
    if (n == 0) break;
    h.update(buf.data(), static_cast<size_t>(n));
    SEALRUN_TRY(write_all(out.get(), std::string_view(buf.data(), static_cast<size_t>(n)), name));
  }
  std::string got = h.finish_hex();
  if (got != f.sha256)
    return mismatch(
        fmt::format("closure file {} has SHA-256 {}, not the pinned {}", f.path, got, f.sha256));
  if (::fchown(out.get(), keyed.st_uid, keyed.st_gid) != 0 ||
      ::fchmod(out.get(), keyed.st_mode & 07777) != 0)
    return Error::from_errno("set the mode of the copy of " + f.path);
  return ok_status();
}

}  // namespace

bool is_pin_mismatch(const Error& e) {
  return e.message().find(PinMismatch::kPrefix) != std::string::npos;
}

std::string pin_images_unavailable() {
  if (::geteuid() != 0) return fmt::format("not root (euid {})", ::geteuid());
  if (::access("/dev/loop-control", R_OK | W_OK) != 0) return "no /dev/loop-control";
  if (find_mkfs_erofs().empty()) return "no mkfs.erofs (Debian: erofs-utils)";
  UniqueFd fs(::fsopen("erofs", FSOPEN_CLOEXEC));
  if (!fs) return fmt::format("the kernel has no erofs ({})", errno_text(errno));
  return {};
}

Result<PinImage> tree_pin_image(const PinImageRequest& req, const std::string& tree,
                                const std::string& tree_sha256) {
  auto build = [&](const std::string&, const std::string& image) -> Status {
    SEALRUN_TRY(run_mkfs(image, tree));
    // The proof: the image's own contents, mounted and walked like any pinned tree.
    auto fd = SEALRUN_TRY(open_at(AT_FDCWD, image, O_RDONLY | O_NOFOLLOW));
    auto mounted = SEALRUN_TRY(mount_pin_image(fd.get(), req.run_id));
    auto digest = SEALRUN_TRY_CTX(
        tree_digest(fmt::format("/proc/self/fd/{}/.", mounted.mount.get())), "the pin image");
    if (digest.sha256 != tree_sha256)
      return mismatch(fmt::format(
          "the image made of {} holds a tree with digest {}, not the pinned {}: it changed since "
          "it was verified",
          tree, digest.sha256, tree_sha256));
    return ok_status();
  };
  return obtain(req, "tree-" + tree_sha256, build);
}

Result<PinImage> closure_pin_image(const PinImageRequest& req,
                                   const std::vector<ClosureFile>& unsorted) {
  std::vector<ClosureFile> files = unsorted;
  std::sort(files.begin(), files.end(),
            [](const ClosureFile& a, const ClosureFile& b) { return a.path < b.path; });
  std::vector<struct stat> keyed(files.size());
  Sha256 key;
  for (size_t i = 0; i < files.size(); ++i) {
    if (files[i].path.size() < 2 || files[i].path[0] != '/')
      return Error::make("closure path is not absolute: " + files[i].path);
    if (::lstat(files[i].path.c_str(), &keyed[i]) != 0)
      return Error::from_errno("closure file " + files[i].path);
    key.update(fmt::format("{}\n{}\n{:o}\n{}\n{}\n", files[i].path, files[i].sha256,
                           keyed[i].st_mode & 07777, keyed[i].st_uid, keyed[i].st_gid));
  }
  auto build = [&](const std::string& work, const std::string& image) -> Status {
    SEALRUN_TRY(make_dir_at(AT_FDCWD, work + "/root", 0755));
    auto root = SEALRUN_TRY(open_at(AT_FDCWD, work + "/root", O_RDONLY | O_DIRECTORY));
    for (size_t i = 0; i < files.size(); ++i)
      SEALRUN_TRY(copy_verified(root.get(), files[i], keyed[i]));
    SEALRUN_TRY(run_mkfs(image, work + "/root"));
    SEALRUN_TRY(req.state->remove_tree(work + "/root"));
    // The proof: each file read back from the mounted image.
    auto fd = SEALRUN_TRY(open_at(AT_FDCWD, image, O_RDONLY | O_NOFOLLOW));
    auto mounted = SEALRUN_TRY(mount_pin_image(fd.get(), req.run_id));
    for (const auto& f : files) {
      auto got = SEALRUN_TRY(hash_file_at(mounted.mount.get(), f.path.substr(1)));
      if (got.sha256 != f.sha256)
        return mismatch(fmt::format("the closure image holds {} with SHA-256 {}, not the pinned {}",
                                    f.path, got.sha256, f.sha256));
    }
    return ok_status();
  };
  return obtain(req, "closure-" + key.finish_hex(), build);
}

Result<UniqueFd> lock_pin_dir(const StateDir& state, const std::string& rel, bool exclusive) {
  auto fd = SEALRUN_TRY(state.open(rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (::flock(fd.get(), (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) return Error::make(rel + " is in use by another run");
    return Error::with_errno(errno, "lock " + rel);
  }
  return fd;
}

}  // namespace sealrun::run
