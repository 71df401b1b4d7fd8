// SPDX-License-Identifier: Apache-2.0
// unpack_image(): see image_unpack.h.
#include "fingerprint/image_unpack.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "core/beneath.h"
#include "core/syscall.h"
#include "fingerprint/image.h"
#include "fingerprint/sha256.h"
#include "fingerprint/tar_reader.h"

namespace sealrun {

namespace {

constexpr size_t kChunk = 1 << 20;

std::string base_of(const std::string& name) {
  size_t slash = name.rfind('/');
  return slash == std::string::npos ? name : name.substr(slash + 1);
}
std::string dir_of(const std::string& name) {
  size_t slash = name.rfind('/');
  return slash == std::string::npos ? "" : name.substr(0, slash);
}
std::string join(const std::string& dir, const std::string& base) {
  return dir.empty() ? base : dir + "/" + base;
}

// A layer bigger than this, uncompressed, is refused: a small gzip stream can inflate without
// bound, and the unpacked root lands in the state directory.
constexpr uint64_t kMaxLayerBytes = 16ull << 30;

// Reads [offset, offset + size) of `from`, inflating it when `gzip`, into `to`; returns the
// SHA-256 (hex) of what was written: the layer's diff id when it is the pinned layer.
Result<std::string> copy_layer(int from, uint64_t offset, uint64_t size, bool gzip, int to,
                               const std::string& what) {
  Sha256 h;
  std::string in(kChunk, '\0');
  std::string out(kChunk, '\0');
  uint64_t done = 0;
  uint64_t written = 0;
  z_stream z{};
  if (gzip && ::inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
    return Error::make(what + ": cannot start gzip decompression");
  struct ZEnd {
    z_stream* z;
    bool on;
    ~ZEnd() {
      if (on) ::inflateEnd(z);
    }
  } z_end{&z, gzip};
  auto emit = [&](const char* data, size_t n) -> Status {
    written += n;
    if (written > kMaxLayerBytes)
      return Error::make(fmt::format("{}: more than {} bytes uncompressed", what, kMaxLayerBytes));
    h.update(data, n);
    return write_all(to, std::string_view(data, n), what);
  };
  bool stream_end = false;
  while (done < size) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(kChunk, size - done));
    ssize_t n = ::pread(from, in.data(), want, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::from_errno("read " + what);
    if (n == 0) return Error::make(what + ": ends early");
    done += static_cast<uint64_t>(n);
    if (!gzip) {
      SEALRUN_TRY(emit(in.data(), static_cast<size_t>(n)));
      continue;
    }
    z.next_in = reinterpret_cast<Bytef*>(in.data());
    z.avail_in = static_cast<uInt>(n);
    while (z.avail_in > 0 && !stream_end) {
      z.next_out = reinterpret_cast<Bytef*>(out.data());
      z.avail_out = static_cast<uInt>(out.size());
      int rc = ::inflate(&z, Z_NO_FLUSH);
      if (rc != Z_OK && rc != Z_STREAM_END)
        return Error::make(fmt::format("{}: not a valid gzip stream (zlib {})", what, rc));
      SEALRUN_TRY(emit(out.data(), out.size() - z.avail_out));
      stream_end = rc == Z_STREAM_END;
    }
  }
  if (gzip) {
    // Whatever inflate still holds once all input was given.
    while (!stream_end) {
      z.next_out = reinterpret_cast<Bytef*>(out.data());
      z.avail_out = static_cast<uInt>(out.size());
      int rc = ::inflate(&z, Z_FINISH);
      if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR)
        return Error::make(fmt::format("{}: not a valid gzip stream (zlib {})", what, rc));
      SEALRUN_TRY(emit(out.data(), out.size() - z.avail_out));
      if (rc == Z_BUF_ERROR && z.avail_out == out.size())
        return Error::make(what + ": the gzip stream ends early");
      stream_end = rc == Z_STREAM_END;
    }
  }
  return h.finish_hex();
}

// Removes every entry of directory `rel` below root (not the directory itself).
Status empty_dir_beneath(int root, const std::string& rel) {
  auto dir = open_dir_beneath(root, rel);
  if (!dir) return ok_status();  // nothing below to hide
  UniqueFd copy(::fcntl(dir->get(), F_DUPFD_CLOEXEC, 0));
  DIR* d = ::fdopendir(copy.get());
  if (d == nullptr) return Error::from_errno("opendir " + rel);
  (void)copy.release();
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  ::closedir(d);
  for (const auto& n : names) SEALRUN_TRY(remove_tree_beneath(root, join(rel, n)));
  return ok_status();
}

// Makes every missing directory of `rel` below root (0755, root's), never through a link.
Status ensure_dirs(int root, const std::string& rel) {
  if (rel.empty()) return ok_status();
  size_t start = 0;
  while (start <= rel.size()) {
    size_t slash = rel.find('/', start);
    std::string prefix = rel.substr(0, slash);
    SEALRUN_TRY(make_dir_beneath(root, prefix, 0755, true));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return ok_status();
}

Status apply_whiteouts(int root, const std::vector<TarMember>& members) {
  for (const TarMember& m : members) {
    std::string base = base_of(m.name);
    if (base.rfind(".wh.", 0) != 0) continue;
    std::string dir = dir_of(m.name);
    // Named in the error: a whiteout below a link fails to resolve beneath the root (no link is
    // followed), and the message says which member asked for it.
    if (base == ".wh..wh..opq")
      SEALRUN_TRY_CTX(empty_dir_beneath(root, dir), "whiteout " + m.name);
    else
      SEALRUN_TRY_CTX(remove_tree_beneath(root, join(dir, base.substr(4))), "whiteout " + m.name);
  }
  return ok_status();
}

Status create_member(int root, int layer_fd, const TarMember& m, UnpackedImage* out) {
  std::string dir = dir_of(m.name);
  std::string base = base_of(m.name);
  SEALRUN_TRY(ensure_dirs(root, dir));
  auto parent = SEALRUN_TRY(open_dir_beneath(root, dir));
  struct stat st {};
  bool exists = ::fstatat(parent.get(), base.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
  // A later layer replaces what an earlier one left at this name (a directory stays a directory
  // when the new member is one too, taking its mode and owner).
  if (exists && !(S_ISDIR(st.st_mode) && m.kind == TarKind::kDirectory))
    SEALRUN_TRY(remove_tree_beneath(root, m.name));
  switch (m.kind) {
    case TarKind::kDirectory: {
      if (!(exists && S_ISDIR(st.st_mode)) && ::mkdirat(parent.get(), base.c_str(), 0700) != 0)
        return Error::from_errno("mkdir " + m.name);
      auto d = SEALRUN_TRY(open_dir_beneath(root, m.name));
      if (::fchown(d.get(), m.uid, m.gid) != 0 || ::fchmod(d.get(), m.mode) != 0)
        return Error::from_errno("chown/chmod " + m.name);
      break;
    }
    case TarKind::kRegular: {
      auto f = SEALRUN_TRY(
          open_at(parent.get(), base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
      std::string buf(kChunk, '\0');
      uint64_t done = 0;
      while (done < m.size) {
        size_t want = static_cast<size_t>(std::min<uint64_t>(kChunk, m.size - done));
        ssize_t n = ::pread(layer_fd, buf.data(), want, static_cast<off_t>(m.data_offset + done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return Error::make("read layer member " + m.name);
        SEALRUN_TRY(
            write_all(f.get(), std::string_view(buf.data(), static_cast<size_t>(n)), m.name));
        done += static_cast<uint64_t>(n);
      }
      if (::fchown(f.get(), m.uid, m.gid) != 0 || ::fchmod(f.get(), m.mode) != 0)
        return Error::from_errno("chown/chmod " + m.name);
      out->bytes += m.size;
      break;
    }
    case TarKind::kSymlink:
      if (::symlinkat(m.link_target.c_str(), parent.get(), base.c_str()) != 0)
        return Error::from_errno("symlink " + m.name);
      if (::fchownat(parent.get(), base.c_str(), m.uid, m.gid, AT_SYMLINK_NOFOLLOW) != 0)
        return Error::from_errno("chown " + m.name);
      break;
    case TarKind::kHardlink: {
      auto target = SEALRUN_TRY_CTX(normalize_member_name(m.link_target), "hard link " + m.name);
      auto from = SEALRUN_TRY(open_dir_beneath(root, dir_of(target)));
      // linkat without AT_SYMLINK_FOLLOW links the entry itself, never what a link points to.
      if (::linkat(from.get(), base_of(target).c_str(), parent.get(), base.c_str(), 0) != 0)
        return Error::from_errno("hard link " + m.name + " -> " + target);
      break;
    }
    case TarKind::kOther:
      ++out->skipped;
      return ok_status();
  }
  ++out->entries;
  return ok_status();
}

}  // namespace

Result<UnpackedImage> unpack_image(const std::string& archive, const std::string& image_id,
                                   const std::vector<std::string>& diff_ids,
                                   const std::string& dest, const std::string& scratch) {
  auto id = SEALRUN_TRY(inspect_image_archive(archive));
  if (id.image_id != image_id || id.diff_ids != diff_ids)
    return Error::make(
        fmt::format("{}: is image {}, not the pinned {}", archive, id.image_id, image_id));
  auto in = SEALRUN_TRY(open_at(AT_FDCWD, archive, O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  auto root = SEALRUN_TRY(open_at(AT_FDCWD, dest, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  UnpackedImage out;
  for (size_t i = 0; i < id.layers.size(); ++i) {
    const ImageLayerBlob& blob = id.layers[i];
    std::string what = fmt::format("{}: layer {}", archive, i);
    if (!blob.compression.empty() && blob.compression != "gzip")
      return Error::make(fmt::format(
          "{} is {}-compressed; bubblewrap runs unpack plain and gzip layers only: run it with "
          "--mechanism podman",
          what, blob.compression));
    // A private copy: what is unpacked is exactly what was hashed, whatever the archive does now.
    std::string copy_path = fmt::format("{}/layer-{}.tar", scratch, i);
    auto copy = SEALRUN_TRY(
        open_at(AT_FDCWD, copy_path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    ::unlink(copy_path.c_str());  // held open only: nothing to clean up after a crash
    std::string digest = SEALRUN_TRY(
        copy_layer(in.get(), blob.offset, blob.size, blob.compression == "gzip", copy.get(), what));
    if ("sha256:" + digest != diff_ids[i])
      return Error::make(fmt::format("{}: hashes to sha256:{}, the pinned diff_id is {}", what,
                                     digest, diff_ids[i]));
    if (::lseek(copy.get(), 0, SEEK_SET) != 0) return Error::from_errno("seek " + what);
    auto scan = SEALRUN_TRY_CTX(scan_tar(copy.get(), what), "unpack");
    SEALRUN_TRY_CTX(apply_whiteouts(root.get(), scan.members), what + ": whiteouts");
    for (const TarMember& m : scan.members) {
      if (m.name == "." || base_of(m.name).rfind(".wh.", 0) == 0) continue;
      SEALRUN_TRY_CTX(create_member(root.get(), copy.get(), m, &out),
                      fmt::format("{}: member {}", what, m.name));
    }
    ++out.layers;
  }
  return out;
}

}  // namespace sealrun
