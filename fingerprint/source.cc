// Per-file source manifests (source.h, docs/source-manifest.md): building one from a checked-out
// tree, its canonical JSON-lines bytes, a strict bounded parser, and verification of a tree
// against it. The git side (identity, export) is in git_source.cc.
//
// Trees are walked with openat(2) from directory descriptors and O_NOFOLLOW on every component, so
// a symlink anywhere (to "/", to "..", to another file) is seen as a symlink and never followed;
// manifests list regular files only, and a symlink or a special file in the tree is refused by
// name (build) or reported as a mismatch (verify).
#include "fingerprint/source.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "core/hex.h"
#include "core/syscall.h"
#include "fingerprint/file_hash.h"
#include "fingerprint/image_json.h"

namespace sealrun {
namespace {

constexpr size_t kMaxPathBytes = 4096;
constexpr size_t kMaxLineBytes = 8192;
constexpr int kMaxDepth = 256;
constexpr size_t kMaxTreeEntries = 2000000;

struct DirCloser {
  void operator()(DIR* d) const { ::closedir(d); }
};

// Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF (what a JSON string can
// carry losslessly).
bool valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t n = 0;
    uint32_t cp = c;
    if (c >= 0x80) {
      if ((c >> 5) == 0x6) {
        n = 1, cp = c & 0x1f;
      } else if ((c >> 4) == 0xe) {
        n = 2, cp = c & 0x0f;
      } else if ((c >> 3) == 0x1e) {
        n = 3, cp = c & 0x07;
      } else {
        return false;
      }
    }
    if (s.size() - i - 1 < n) return false;
    for (size_t k = 1; k <= n; ++k) {
      auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc >> 6) != 0x2) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += n + 1;
  }
  return true;
}

// Rules for a manifest path: relative, '/'-separated, no empty, "." or ".." components, no NUL,
// valid UTF-8 (the manifest is JSON), at most PATH_MAX bytes.
Status check_manifest_path(std::string_view path) {
  if (path.empty()) return Error::make("empty path");
  if (path.size() > kMaxPathBytes)
    return Error::make(
        fmt::format("path of {} bytes is over the limit of {}", path.size(), kMaxPathBytes));
  if (path.find('\0') != std::string_view::npos)
    return Error::make(fmt::format("path '{}' contains NUL", path.substr(0, path.find('\0'))));
  if (path.front() == '/') return Error::make(fmt::format("path '{}' is absolute", path));
  if (!valid_utf8(path)) return Error::make("path is not valid UTF-8");
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    std::string_view comp = path.substr(start, end - start);
    if (comp.empty()) return Error::make(fmt::format("path '{}' has an empty component", path));
    if (comp == ".") return Error::make(fmt::format("path '{}' has a '.' component", path));
    if (comp == "..") return Error::make(fmt::format("path '{}' contains '..'", path));
    start = end + 1;
  }
  return ok_status();
}

std::string describe_kind(mode_t mode) {
  if (S_ISLNK(mode)) return "a symlink";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  return "not a regular file";
}

std::string digest_text(const std::string& sha256, uint64_t bytes) {
  return fmt::format("sha256:{} {}", sha256, bytes);
}

// Walks the tree under `dirfd` without following anything; calls visit(path, dirfd, name, stat)
// for every entry that is not a directory. Names are visited in byte order per directory.
template <typename Visit>
Status walk(int dirfd, const std::string& prefix, int depth, size_t* entries, Visit& visit) {
  if (depth > kMaxDepth)
    return Error::make(fmt::format("{}: nested deeper than {} directories", prefix, kMaxDepth));
  int dup_fd = ::fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
  if (dup_fd < 0) return Error::from_errno("dup directory descriptor");
  std::unique_ptr<DIR, DirCloser> dir(::fdopendir(dup_fd));
  if (!dir) {
    ::close(dup_fd);
    return Error::from_errno(fmt::format("open directory {}", prefix.empty() ? "." : prefix));
  }
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(dir.get())) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    if (++*entries > kMaxTreeEntries)
      return Error::make(
          fmt::format("more than {} entries; refusing to walk further", kMaxTreeEntries));
    names.push_back(std::move(name));
  }
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    std::string path = prefix.empty() ? name : prefix + "/" + name;
    struct stat st {};
    if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
      return Error::from_errno(fmt::format("stat {}", path));
    if (S_ISDIR(st.st_mode)) {
      auto sub = SEALRUN_TRY(open_at(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW));
      SEALRUN_TRY(walk(sub.get(), path, depth + 1, entries, visit));
    } else {
      SEALRUN_TRY(visit(path, dirfd, name, st));
    }
  }
  return ok_status();
}

Result<UniqueFd> open_root(const std::string& root) {
  return open_at(AT_FDCWD, root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
}

// What is at `path` under `rootfd`, reached one component at a time with O_NOFOLLOW: the digest
// text of a regular file, or why there is none ("absent", "passes through a symlink at a/b", ...).
std::string observe(int rootfd, const std::string& path) {
  UniqueFd holder;
  int dirfd = rootfd;
  size_t start = 0;
  while (true) {
    size_t end = path.find('/', start);
    std::string comp =
        path.substr(start, end == std::string::npos ? std::string::npos : end - start);
    std::string so_far = path.substr(0, end);
    struct stat st {};
    if (::fstatat(dirfd, comp.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
      return errno == ENOENT ? "absent"
                             : fmt::format("cannot stat {}: {}", so_far, strerror(errno));
    if (end == std::string::npos) {
      if (!S_ISREG(st.st_mode)) return describe_kind(st.st_mode);
      auto digest = hash_file_at(dirfd, comp);
      if (!digest.ok()) return "unreadable: " + digest.error().message();
      return digest_text(digest->sha256, digest->bytes);
    }
    if (S_ISLNK(st.st_mode)) return fmt::format("passes through a symlink at {}", so_far);
    if (!S_ISDIR(st.st_mode))
      return fmt::format("passes through {} at {}", describe_kind(st.st_mode), so_far);
    auto next = open_at(dirfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    if (!next.ok()) {
      if (next.error().err() == ELOOP || next.error().err() == ENOTDIR)
        return fmt::format("passes through a symlink at {}", so_far);
      return "unreadable: " + next.error().message();
    }
    holder = std::move(*next);
    dirfd = holder.get();
    start = end + 1;
  }
}

}  // namespace

Result<Manifest> build_manifest(const std::string& root) {
  auto rootfd = SEALRUN_TRY_CTX(open_root(root), "build manifest");
  Manifest manifest;
  size_t entries = 0;
  auto visit = [&](const std::string& path, int dirfd, const std::string& name,
                   const struct stat& st) -> Status {
    if (!S_ISREG(st.st_mode))
      return Error::make(
          fmt::format("{}/{} is {}; source manifests list regular files only "
                      "(remove it, or pin this tree with `fingerprint tree`)",
                      root, path, describe_kind(st.st_mode)));
    SEALRUN_TRY_CTX(check_manifest_path(path), fmt::format("{}: cannot list a file", root));
    auto digest = SEALRUN_TRY(hash_file_at(dirfd, name));
    manifest.push_back({path, digest.bytes, digest.sha256});
    return ok_status();
  };
  SEALRUN_TRY_CTX(walk(rootfd.get(), "", 0, &entries, visit), root);
  std::sort(manifest.begin(), manifest.end(),
            [](const ManifestEntry& a, const ManifestEntry& b) { return a.path < b.path; });
  return manifest;
}

std::string manifest_to_jsonl(const Manifest& manifest) {
  std::string out;
  for (const auto& e : manifest) {
    out += "{\"path\":";
    // error_handler replace: cannot throw; build_manifest and parse_manifest only admit UTF-8.
    out += nlohmann::json(e.path).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    out += fmt::format(",\"bytes\":{},\"sha256\":\"{}\"}}\n", e.bytes, e.sha256);
  }
  return out;
}

Result<Manifest> parse_manifest(std::string_view jsonl, size_t max_entries) {
  Manifest manifest;
  size_t line_no = 0;
  while (!jsonl.empty()) {
    ++line_no;
    size_t nl = jsonl.find('\n');
    if (nl == std::string_view::npos)
      return Error::make(fmt::format("manifest line {}: no final newline (truncated?)", line_no));
    std::string_view line = jsonl.substr(0, nl);
    jsonl.remove_prefix(nl + 1);
    if (line_no > max_entries)
      return Error::make(fmt::format("manifest has more than {} entries", max_entries));
    std::string where = fmt::format("manifest line {}", line_no);
    if (line.size() > kMaxLineBytes)
      return Error::make(fmt::format("{}: longer than {} bytes", where, kMaxLineBytes));
    auto doc = SEALRUN_TRY(parse_bounded_json(line, where, kMaxLineBytes, 2));
    if (!doc.is_object()) return Error::make(fmt::format("{}: not a JSON object", where));
    for (const auto& [key, value] : doc.items()) {
      if (key != "path" && key != "bytes" && key != "sha256")
        return Error::make(fmt::format("{}: unknown key \"{}\"", where, key));
    }
    if (!doc.contains("path") || !doc["path"].is_string())
      return Error::make(fmt::format("{}: \"path\" missing or not a string", where));
    if (!doc.contains("bytes") || !doc["bytes"].is_number_unsigned())
      return Error::make(fmt::format("{}: \"bytes\" missing or not a non-negative integer", where));
    if (!doc.contains("sha256") || !doc["sha256"].is_string() ||
        !is_sha256_hex(doc["sha256"].get_ref<const std::string&>()))
      return Error::make(
          fmt::format("{}: \"sha256\" missing or not 64 lower-case hex digits", where));
    ManifestEntry entry{doc["path"].get<std::string>(), doc["bytes"].get<uint64_t>(),
                        doc["sha256"].get<std::string>()};
    SEALRUN_TRY_CTX(check_manifest_path(entry.path), where);
    if (!manifest.empty()) {
      const std::string& prev = manifest.back().path;
      if (entry.path == prev)
        return Error::make(fmt::format("{}: duplicate path '{}'", where, entry.path));
      if (entry.path < prev)
        return Error::make(
            fmt::format("{}: '{}' is out of order (entries must be sorted by raw "
                        "path bytes)",
                        where, entry.path));
    }
    // One manifest, one byte string: the pin is a hash of these bytes, so only the canonical
    // spelling is accepted (key order path, bytes, sha256; no spaces; minimal escapes).
    manifest.push_back(std::move(entry));
    std::string canonical = manifest_to_jsonl({manifest.back()});
    canonical.pop_back();
    if (line != canonical)
      return Error::make(fmt::format("{}: not in canonical form; expected {}", where, canonical));
  }
  return manifest;
}

Result<std::vector<ManifestMismatch>> verify_manifest(const std::string& root,
                                                      const Manifest& manifest) {
  auto rootfd = SEALRUN_TRY_CTX(open_root(root), "verify manifest");
  std::vector<ManifestMismatch> mismatches;
  std::set<std::string> listed;
  for (const auto& e : manifest) {
    SEALRUN_TRY_CTX(check_manifest_path(e.path), "manifest entry");
    listed.insert(e.path);
    std::string expected = digest_text(e.sha256, e.bytes);
    std::string observed = observe(rootfd.get(), e.path);
    if (observed != expected) mismatches.push_back({e.path, expected, observed});
  }
  // Anything else in the tree that is not a directory is unlisted: a regular file the manifest does
  // not name, or a symlink or special file, which a manifest cannot name at all.
  size_t entries = 0;
  auto visit = [&](const std::string& path, int dirfd, const std::string& name,
                   const struct stat& st) -> Status {
    if (listed.count(path) != 0) return ok_status();
    std::string observed;
    if (S_ISREG(st.st_mode)) {
      auto digest = hash_file_at(dirfd, name);
      observed = digest.ok() ? digest_text(digest->sha256, digest->bytes)
                             : "unreadable: " + digest.error().message();
    } else {
      observed = describe_kind(st.st_mode);
    }
    mismatches.push_back({path, "absent", observed});
    return ok_status();
  };
  SEALRUN_TRY_CTX(walk(rootfd.get(), "", 0, &entries, visit), root);
  std::sort(mismatches.begin(), mismatches.end(),
            [](const ManifestMismatch& a, const ManifestMismatch& b) { return a.path < b.path; });
  return mismatches;
}

}  // namespace sealrun
