// SPDX-License-Identifier: Apache-2.0
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
#include <cctype>
#include <cstring>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
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

// A JSON string exactly as nlohmann::json::dump() (ensure_ascii off) writes it, for valid UTF-8:
// '"' and '\\' escaped, \b \f \n \r \t, other control characters as \u00xx, everything else raw.
void append_json_string(std::string* out, std::string_view s) {
  out->push_back('"');
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\b':
        *out += "\\b";
        break;
      case '\f':
        *out += "\\f";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\r':
        *out += "\\r";
        break;
      case '\t':
        *out += "\\t";
        break;
      default:
        if (c < 0x20) {
          *out += fmt::format("\\u{:04x}", c);
        } else {
          out->push_back(ch);
        }
    }
  }
  out->push_back('"');
}

// Reads a string written exactly as append_json_string() writes it, starting at the opening quote;
// nullopt for any other spelling.
std::optional<std::string> read_canonical_string(std::string_view s, size_t* pos) {
  size_t i = *pos;
  if (i >= s.size() || s[i] != '"') return std::nullopt;
  std::string out;
  for (++i; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c == '"') {
      *pos = i + 1;
      return out;
    }
    if (c < 0x20) return std::nullopt;
    if (c != '\\') {
      out.push_back(s[i]);
      continue;
    }
    if (++i >= s.size()) return std::nullopt;
    switch (s[i]) {
      case '"':
        out.push_back('"');
        break;
      case '\\':
        out.push_back('\\');
        break;
      case 'b':
        out.push_back('\b');
        break;
      case 'f':
        out.push_back('\f');
        break;
      case 'n':
        out.push_back('\n');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'u': {
        if (i + 4 >= s.size() || s.substr(i + 1, 2) != "00") return std::nullopt;
        auto hex = from_hex(s.substr(i + 3, 2));
        if (!hex || s[i + 3] > '1' || std::isupper(static_cast<unsigned char>(s[i + 4])))
          return std::nullopt;
        char v = (*hex)[0];
        if (v == '\b' || v == '\f' || v == '\n' || v == '\r' || v == '\t') return std::nullopt;
        out.push_back(v);
        i += 4;
        break;
      }
      default:
        return std::nullopt;
    }
  }
  return std::nullopt;
}

bool consume(std::string_view s, size_t* pos, std::string_view lit) {
  if (s.substr(*pos, lit.size()) != lit) return false;
  *pos += lit.size();
  return true;
}

// The fast path for a canonical line: {"path":<string>,"bytes":<digits>,"sha256":"<64 hex>"}.
// Anything else (including a valid but non-canonical line) is nullopt and goes to the slow path.
std::optional<ManifestEntry> parse_canonical_line(std::string_view line) {
  size_t pos = 0;
  ManifestEntry e;
  if (!consume(line, &pos, "{\"path\":")) return std::nullopt;
  auto path = read_canonical_string(line, &pos);
  if (!path || !consume(line, &pos, ",\"bytes\":")) return std::nullopt;
  e.path = std::move(*path);
  size_t digits = 0;
  while (pos + digits < line.size() && std::isdigit(static_cast<unsigned char>(line[pos + digits])))
    ++digits;
  if (digits == 0 || digits > 20 || (digits > 1 && line[pos] == '0')) return std::nullopt;
  unsigned long long bytes = 0;
  for (size_t k = 0; k < digits; ++k) {
    unsigned d = static_cast<unsigned>(line[pos + k] - '0');
    if (bytes > (UINT64_MAX - d) / 10) return std::nullopt;
    bytes = bytes * 10 + d;
  }
  pos += digits;
  e.bytes = bytes;
  if (!consume(line, &pos, ",\"sha256\":\"")) return std::nullopt;
  e.sha256 = std::string(line.substr(pos, 64));
  pos += 64;
  if (!is_sha256_hex(e.sha256) || !consume(line, &pos, "\"}") || pos != line.size())
    return std::nullopt;
  return e;
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

Result<UniqueFd> open_source_root(const std::string& root) {
  auto fd = open_at(AT_FDCWD, root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  // O_DIRECTORY | O_NOFOLLOW on a symlink fails with ENOTDIR (or ELOOP); say which it is.
  struct stat st {};
  if (!fd.ok() && ::lstat(root.c_str(), &st) == 0 && S_ISLNK(st.st_mode))
    return Error::make(fmt::format("{}: is a symlink; give the directory itself", root));
  return fd;
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
                             : fmt::format("cannot stat {}: {}", so_far, errno_text(errno));
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
  auto rootfd = SEALRUN_TRY_CTX(open_source_root(root), "build manifest");
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
    if (valid_utf8(e.path)) {
      append_json_string(&out, e.path);
    } else {
      // Cannot come from build_manifest or parse_manifest (both admit UTF-8 only); never throw.
      out += nlohmann::json(e.path).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
    out += ",\"bytes\":";
    out += std::to_string(e.bytes);
    out += ",\"sha256\":\"";
    out += e.sha256;
    out += "\"}\n";
  }
  return out;
}

namespace {

// The slow, general reading of one line: explains exactly what is wrong with a line that is not
// canonical (unknown key, wrong type, key order, spacing, escapes).
Result<ManifestEntry> parse_line_diagnosed(std::string_view line, const std::string& where) {
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
  // One manifest, one byte string: the pin is a hash of these bytes, so only the canonical
  // spelling is accepted (key order path, bytes, sha256; no spaces; minimal escapes).
  std::string canonical = manifest_to_jsonl({entry});
  canonical.pop_back();
  if (line != canonical)
    return Error::make(fmt::format("{}: not in canonical form; expected {}", where, canonical));
  return entry;
}

}  // namespace

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
    auto where = [line_no] { return fmt::format("manifest line {}", line_no); };
    if (line.size() > kMaxLineBytes)
      return Error::make(fmt::format("{}: longer than {} bytes", where(), kMaxLineBytes));
    std::optional<ManifestEntry> entry = parse_canonical_line(line);
    if (!entry || !check_manifest_path(entry->path).ok())
      entry = SEALRUN_TRY(parse_line_diagnosed(line, where()));
    if (!manifest.empty()) {
      const std::string& prev = manifest.back().path;
      if (entry->path == prev)
        return Error::make(fmt::format("{}: duplicate path '{}'", where(), entry->path));
      if (entry->path < prev)
        return Error::make(
            fmt::format("{}: '{}' is out of order (entries must be sorted by raw path bytes)",
                        where(), entry->path));
    }
    manifest.push_back(std::move(*entry));
  }
  return manifest;
}

Result<std::vector<ManifestMismatch>> verify_manifest(const std::string& root,
                                                      const Manifest& manifest) {
  auto rootfd = SEALRUN_TRY_CTX(open_source_root(root), "verify manifest");
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
