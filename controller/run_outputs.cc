// Outputs and logs: see run_outputs.h.
#include "controller/run_outputs.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <stdio.h>  // renameat2
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "core/syscall.h"
#include "fingerprint/file_hash.h"

namespace sealrun::run {

namespace fs = std::filesystem;

Result<CollectedOutputs> collect_outputs(const std::string& output_dir, size_t max_entries) {
  CollectedOutputs c;
  std::error_code ec;
  fs::recursive_directory_iterator it(output_dir, fs::directory_options::none, ec);
  if (ec) return Error::with_errno(ec.value(), fmt::format("read outputs in {}", output_dir));
  size_t seen = 0;
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) return Error::with_errno(ec.value(), fmt::format("walk outputs in {}", output_dir));
    if (++seen > max_entries)
      return Error::make(
          fmt::format("{}: more than {} entries in the outputs", output_dir, max_entries));
    std::string rel = fs::relative(it->path(), output_dir, ec).string();
    auto st = lstat_at(AT_FDCWD, it->path().string());
    if (!st) continue;  // vanished: the job has stopped, so only cleanup races here
    if (S_ISDIR(st->st_mode)) continue;
    if (S_ISREG(st->st_mode)) {
      auto digest = hash_file(it->path().string());
      if (!digest) return std::move(digest).error().context("hash output " + rel);
      c.outputs.push_back({rel, digest->bytes, digest->sha256});
      c.total_bytes += digest->bytes;
    } else if (S_ISLNK(st->st_mode)) {
      c.ignored.push_back(fmt::format("{} -> {} (symlink, not an output)", rel,
                                      fs::read_symlink(it->path(), ec).string()));
    } else {
      c.ignored.push_back(fmt::format("{} (not a regular file, not an output)", rel));
    }
  }
  std::sort(c.outputs.begin(), c.outputs.end(),
            [](const auto& a, const auto& b) { return a.path < b.path; });
  return c;
}

namespace {

// Whether `path` is listed in the (sorted) manifest with exactly these bytes.
bool is_unchanged(const Manifest& manifest, const std::string& path, uint64_t bytes,
                  const std::string& sha256) {
  auto it =
      std::lower_bound(manifest.begin(), manifest.end(), path,
                       [](const ManifestEntry& e, const std::string& p) { return e.path < p; });
  return it != manifest.end() && it->path == path && it->bytes == bytes && it->sha256 == sha256;
}

}  // namespace

Result<size_t> move_changed_files(const std::string& source_root, const Manifest& manifest,
                                  const std::string& output_dir, size_t max_entries) {
  std::error_code ec;
  fs::recursive_directory_iterator it(source_root, fs::directory_options::none, ec);
  if (ec) return Error::with_errno(ec.value(), "read the source copy " + source_root);
  size_t seen = 0, moved = 0;
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) return Error::with_errno(ec.value(), "walk the source copy " + source_root);
    if (++seen > max_entries)
      return Error::make(fmt::format("{}: more than {} entries", source_root, max_entries));
    auto st = lstat_at(AT_FDCWD, it->path().string());
    if (!st || !S_ISREG(st->st_mode)) continue;  // the job has stopped: nothing else moves here
    std::string rel = fs::relative(it->path(), source_root, ec).string();
    auto digest = hash_file(it->path().string());
    if (!digest) return std::move(digest).error().context("hash " + rel);
    if (is_unchanged(manifest, rel, digest->bytes, digest->sha256)) continue;
    fs::path target = fs::path(output_dir) / rel;
    fs::create_directories(target.parent_path(), ec);
    if (ec) return Error::with_errno(ec.value(), "mkdir for output " + rel);
    // RENAME_NOREPLACE: a path the job also wrote under the output mount is not silently lost.
    if (::renameat2(AT_FDCWD, it->path().c_str(), AT_FDCWD, target.c_str(), RENAME_NOREPLACE) != 0)
      return Error::from_errno(fmt::format("move output {} out of the source copy", rel));
    ++moved;
  }
  return moved;
}

Result<receipt::StreamRecord> summarise_stream(const std::string& path) {
  receipt::StreamRecord r;
  auto digest = SEALRUN_TRY(hash_file(path));
  r.sha256 = digest.sha256;
  r.size = digest.bytes;
  auto fd = SEALRUN_TRY(open_at(AT_FDCWD, path, O_RDONLY | O_NOFOLLOW));
  off_t start = static_cast<off_t>(
      digest.bytes > receipt::kTailBytes ? digest.bytes - receipt::kTailBytes : 0);
  if (::lseek(fd.get(), start, SEEK_SET) < 0) return Error::from_errno("seek " + path);
  r.tail = SEALRUN_TRY(read_up_to(fd.get(), receipt::kTailBytes, path));
  return r;
}

Result<uint64_t> keep_log_tail(const std::string& from, const std::string& to, uint64_t max_bytes) {
  auto in = SEALRUN_TRY(open_at(AT_FDCWD, from, O_RDONLY | O_NOFOLLOW));
  auto st = SEALRUN_TRY(fstat_fd(in.get(), from));
  uint64_t size = static_cast<uint64_t>(st.st_size);
  uint64_t keep = std::min(size, max_bytes);
  if (::lseek(in.get(), static_cast<off_t>(size - keep), SEEK_SET) < 0)
    return Error::from_errno("seek " + from);
  auto out = SEALRUN_TRY(open_at(AT_FDCWD, to, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0644));
  uint64_t copied = 0;
  while (copied < keep) {
    auto chunk =
        SEALRUN_TRY(read_up_to(in.get(), std::min<uint64_t>(keep - copied, 1 << 20), from));
    if (chunk.empty()) break;
    SEALRUN_TRY(write_all(out.get(), chunk, to));
    copied += chunk.size();
  }
  return copied;
}

}  // namespace sealrun::run
