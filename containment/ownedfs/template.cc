// SPDX-License-Identifier: Apache-2.0
// The owned file system's template: see template.h.
#include "containment/ownedfs/template.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <utility>

#include "core/atomic_write.h"
#include "core/strict_json.h"
#include "core/syscall.h"
#include "fingerprint/file_hash.h"
#include "fingerprint/sha256.h"

namespace sealrun::ownedfs {

namespace {

constexpr int kFormat = 1;
// Bounds on what is kept: the shapes mkfs_argv makes need ~50 KiB in a handful of extents.
constexpr uint64_t kMaxDataBytes = 16ULL << 20;
constexpr size_t kMaxExtents = 4096;

using Extents = std::vector<std::pair<uint64_t, uint64_t>>;  // {offset, length}

Result<Extents> data_extents(int fd, uint64_t size) {
  Extents out;
  uint64_t total = 0;
  off_t at = 0;
  while (static_cast<uint64_t>(at) < size) {
    off_t data = ::lseek(fd, at, SEEK_DATA);
    if (data < 0) {
      if (errno == ENXIO) break;  // no data after `at`
      return Error::from_errno("seek data in the new image");
    }
    off_t hole = ::lseek(fd, data, SEEK_HOLE);
    if (hole < 0) return Error::from_errno("seek hole in the new image");
    out.emplace_back(static_cast<uint64_t>(data), static_cast<uint64_t>(hole - data));
    total += static_cast<uint64_t>(hole - data);
    if (out.size() > kMaxExtents || total > kMaxDataBytes)
      return Error::make("the new image holds too much metadata to keep as a template");
    at = hole;
  }
  return out;
}

Status pread_all(int fd, char* buf, size_t len, uint64_t off) {
  while (len > 0) {
    ssize_t n = ::pread(fd, buf, len, static_cast<off_t>(off));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Error::from_errno("read the template's extents");
    buf += n;
    len -= static_cast<size_t>(n);
    off += static_cast<uint64_t>(n);
  }
  return ok_status();
}

Status pwrite_all(int fd, const char* buf, size_t len, uint64_t off) {
  while (len > 0) {
    ssize_t n = ::pwrite(fd, buf, len, static_cast<off_t>(off));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Error::from_errno("write the template into the new image");
    buf += n;
    len -= static_cast<size_t>(n);
    off += static_cast<uint64_t>(n);
  }
  return ok_status();
}

Result<UniqueFd> open_templates(int ownedfs_dirfd, bool create) {
  if (create && ::mkdirat(ownedfs_dirfd, kTemplateDir, 0700) != 0 && errno != EEXIST)
    return Error::from_errno("make the template directory");
  auto fd = SEALRUN_TRY(open_at(ownedfs_dirfd, kTemplateDir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW));
  auto st = SEALRUN_TRY(fstat_fd(fd.get(), kTemplateDir));
  if (st.st_uid != ::geteuid() || (st.st_mode & 077) != 0)
    return Error::make("the template directory is not a private directory of ours");
  return fd;
}

// A private regular file of ours in `dirfd`, read whole (at most `max` bytes).
Result<std::string> read_private(int dirfd, const std::string& name, size_t max) {
  auto fd = SEALRUN_TRY(open_at(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK));
  auto st = SEALRUN_TRY(fstat_fd(fd.get(), name));
  if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0)
    return Error::make(name + " is not a private regular file of ours");
  if (static_cast<uint64_t>(st.st_size) > max) return Error::make(name + " is too large");
  return read_up_to(fd.get(), max, name);
}

}  // namespace

Result<std::string> template_key(const std::string& mkfs, const std::vector<std::string>& argv,
                                 uint64_t size_bytes) {
  // mkfs.ext4 is usually a link to mke2fs: the program is what it points to.
  std::error_code ec;
  std::string program = std::filesystem::canonical(mkfs, ec).string();
  if (ec) return Error::with_errno(ec.value(), "resolve " + mkfs);
  auto mkfs_digest = SEALRUN_TRY_CTX(hash_file(program), "hash " + program);
  nlohmann::json args = nlohmann::json::array();
  for (size_t i = 1; i + 1 < argv.size(); ++i) args.push_back(argv[i]);  // not the image path
  nlohmann::json key = {{"format", kFormat},
                        {"mkfs_sha256", mkfs_digest.sha256},
                        {"argv", args},
                        {"size_bytes", size_bytes}};
  return sha256_hex(key.dump());
}

Status write_from_template(int ownedfs_dirfd, const std::string& key, int image_fd,
                           uint64_t size_bytes) {
  auto dir = open_templates(ownedfs_dirfd, false);
  if (!dir && dir.error().err() == ENOENT) return Error::make("none for this shape yet");
  if (!dir) return std::move(dir).error();
  auto text = read_private(dir->get(), key + ".json", 1 << 20);
  if (!text && text.error().err() == ENOENT) return Error::make("none for this shape yet");
  if (!text) return std::move(text).error();
  auto rec = SEALRUN_TRY_CTX(parse_strict_json(*text), "template record");
  Extents extents;
  std::string want;
  try {
    if (rec.at("format").get<int>() != kFormat || rec.at("key").get<std::string>() != key ||
        rec.at("size_bytes").get<uint64_t>() != size_bytes)
      return Error::make("the template record is for another shape");
    want = rec.at("data_sha256").get<std::string>();
    for (const auto& e : rec.at("extents"))
      extents.emplace_back(e.at(0).get<uint64_t>(), e.at(1).get<uint64_t>());
  } catch (const std::exception& e) {
    return Error::make(std::string("the template record is malformed: ") + e.what());
  }
  auto data = SEALRUN_TRY(read_private(dir->get(), key + ".data", kMaxDataBytes));
  if (sha256_hex(data) != want) return Error::make("the template's data is corrupt (SHA-256)");
  uint64_t used = 0;
  for (const auto& [off, len] : extents) {
    if (len > data.size() - used || off > size_bytes || len > size_bytes - off)
      return Error::make("the template's extents do not fit its data or the image");
    SEALRUN_TRY(pwrite_all(image_fd, data.data() + used, len, off));
    used += len;
  }
  if (used != data.size()) return Error::make("the template's data is longer than its extents");
  return ok_status();
}

Status save_template(int ownedfs_dirfd, const std::string& key, int image_fd, uint64_t size_bytes) {
  auto extents = SEALRUN_TRY(data_extents(image_fd, size_bytes));
  std::string data;
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [off, len] : extents) {
    size_t at = data.size();
    data.resize(at + len);
    SEALRUN_TRY(pread_all(image_fd, data.data() + at, len, off));
    list.push_back({off, len});
  }
  auto dir = SEALRUN_TRY(open_templates(ownedfs_dirfd, true));
  // The data first: a record only ever names data that is complete.
  SEALRUN_TRY(write_file_atomic_in(dir.get(), key + ".data", data, 0600, "template data"));
  nlohmann::json rec = {{"format", kFormat},
                        {"key", key},
                        {"size_bytes", size_bytes},
                        {"extents", list},
                        {"data_sha256", sha256_hex(data)}};
  return write_file_atomic_in(dir.get(), key + ".json", rec.dump() + "\n", 0600, "template record");
}

}  // namespace sealrun::ownedfs
