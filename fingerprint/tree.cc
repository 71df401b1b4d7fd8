// SPDX-License-Identifier: Apache-2.0
// semantic-tree-v1 inventories (tree.h, docs/semantic-tree-v1.md): opens the root without
// following a symlink, has tree_walk.cc walk it and hash its files in parallel, sorts the entries
// by raw path bytes, and streams one canonical JSON record per line into a sink that digests every
// byte and, for write_tree_inventory, also writes it to the output file. Order and spelling depend
// only on the tree, never on thread timing, so the digest is reproducible.
#include "fingerprint/tree.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "core/hex.h"
#include "core/syscall.h"
#include "fingerprint/digest_cache.h"
#include "fingerprint/sha256.h"
#include "fingerprint/tree_json.h"
#include "fingerprint/tree_walk.h"

namespace sealrun {
namespace {

constexpr std::string_view kHeader = "{\"schema\":\"semantic-tree-v1\"}\n";

// Every inventory byte goes through here: into the digest, and (when there is a file) out in
// large writes.
class InventorySink {
 public:
  explicit InventorySink(int fd = -1, std::string what = {}) : fd_(fd), what_(std::move(what)) {
    buffer_.reserve(kFlushBytes + 64 * 1024);  // a flush's worth and a record: never regrown
  }

  // The bytes are digested a block at a time, not a record at a time: one digest call per ~200
  // bytes cost as much again as the digest itself.
  Status append(std::string_view bytes) {
    buffer_.append(bytes);
    if (buffer_.size() >= kFlushBytes) return flush();
    return ok_status();
  }
  Status flush() {
    if (buffer_.empty()) return ok_status();
    sha_.update(buffer_);
    if (fd_ >= 0) SEALRUN_TRY(write_all(fd_, buffer_, what_));
    buffer_.clear();
    return ok_status();
  }
  // After the last flush().
  std::string finish_hex() { return sha_.finish_hex(); }

 private:
  // Small enough to stay in the CPU's cache between formatting and digesting.
  static constexpr size_t kFlushBytes = 256 * 1024;
  int fd_;
  std::string what_;
  Sha256 sha_;
  std::string buffer_;
};

const char* kind_name(EntryKind kind) {
  switch (kind) {
    case EntryKind::kFile:
      return "file";
    case EntryKind::kDirectory:
      return "directory";
    case EntryKind::kSymlink:
      return "symlink";
  }
  return "?";
}

// One record, keys in the documented order: path, kind, mode, uid, gid, then bytes + sha256
// (file) or target (symlink).
void format_record(const TreeEntry& e, std::string& line) {
  line.clear();
  line += '{';
  tree_json::append_bytes_field(line, "path", e.path);
  line += ",\"kind\":\"";
  line += kind_name(e.kind);
  // The mode as four octal digits ("{:04o}" of at most 07777), without a formatting call.
  const char mode[] = {
      static_cast<char>('0' + ((e.mode >> 9) & 7)), static_cast<char>('0' + ((e.mode >> 6) & 7)),
      static_cast<char>('0' + ((e.mode >> 3) & 7)), static_cast<char>('0' + (e.mode & 7))};
  line += "\",\"mode\":\"";
  line.append(mode, sizeof(mode));
  line += "\",";
  tree_json::append_uint_field(line, "uid", e.uid);
  line += ',';
  tree_json::append_uint_field(line, "gid", e.gid);
  if (e.kind == EntryKind::kFile) {
    line += ',';
    tree_json::append_uint_field(line, "bytes", e.bytes);
    line += ",\"sha256\":\"";
    static constexpr char kHex[] = "0123456789abcdef";
    char hex[2 * sizeof(e.sha256)];
    for (size_t i = 0; i < e.sha256.size(); ++i) {
      hex[2 * i] = kHex[e.sha256[i] >> 4];
      hex[2 * i + 1] = kHex[e.sha256[i] & 0xf];
    }
    line.append(hex, sizeof(hex));
    line += '"';
  } else if (e.kind == EntryKind::kSymlink) {
    line += ',';
    tree_json::append_bytes_field(line, "target", e.target);
  }
  line += "}\n";
}

Result<UniqueFd> open_root(const std::string& root) {
  int fd = retry_eintr(
      [&] { return ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC); });
  if (fd >= 0) return UniqueFd(fd);
  int err = errno;
  struct stat st {};
  if ((err == ELOOP || err == ENOTDIR) && ::lstat(root.c_str(), &st) == 0 && S_ISLNK(st.st_mode))
    return Error::make(fmt::format(
        "{} is a symlink; sealrun never follows symlinks: pass the directory it points to", root));
  if (err == ENOTDIR) return Error::make(fmt::format("{} is not a directory", root));
  return Error::with_errno(err, fmt::format("open directory {}", root));
}

// The records in the walk's order: "." first, then by raw path bytes (tree_order.h).
Result<TreeSummary> write_records(const WalkedTree& tree, InventorySink& sink) {
  SEALRUN_TRY(sink.append(kHeader));
  std::string line;
  for (const TreeEntry* e : tree.order) {
    format_record(*e, line);
    SEALRUN_TRY(sink.append(line));
  }
  SEALRUN_TRY(sink.flush());
  return TreeSummary{sink.finish_hex(), tree.order.size(), tree.regular_bytes};
}

Result<TreeSummary> inventory(const std::string& root, InventorySink& sink,
                              const TreeOptions& options,
                              const std::optional<WalkExclusion>& exclude) {
  auto root_fd = SEALRUN_TRY(open_root(root));
  auto tree = SEALRUN_TRY(walk_and_hash(root_fd.get(), root, options, exclude));
  return write_records(tree, sink);
}

}  // namespace

Result<TreeSummary> write_tree_inventory(const std::string& root, const std::string& out_path,
                                         const TreeOptions& options) {
  // Check the root before creating anything, so a mistyped root leaves no empty output behind.
  {
    auto probe = open_root(root);
    if (!probe.ok()) return std::move(probe).error().context("inventory");
  }
  int fd = retry_eintr([&] {
    return ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  });
  if (fd < 0) {
    if (errno == EEXIST)
      return Error::make(fmt::format(
          "output {} already exists; sealrun never overwrites an inventory: remove it or choose "
          "another path",
          out_path));
    return Error::from_errno(fmt::format("create output {}", out_path));
  }
  UniqueFd out(fd);
  auto remove_output = [&](Error error) -> Result<TreeSummary> {
    out.reset();
    ::unlink(out_path.c_str());
    return error;
  };

  auto st = fstat_fd(out.get(), out_path);
  if (!st.ok()) return remove_output(std::move(st).error());
  WalkExclusion self{st->st_dev, st->st_ino, fmt::format("the output file {}", out_path)};

  InventorySink sink(out.get(), out_path);
  auto summary = inventory(root, sink, options, self);
  if (!summary.ok()) return remove_output(std::move(summary).error().context("inventory"));
  if (::close(out.release()) != 0)
    return remove_output(Error::from_errno(fmt::format("close output {}", out_path)));
  return summary;
}

Result<TreeSummary> tree_digest(const std::string& root, const TreeOptions& options) {
  InventorySink sink;
  return inventory(root, sink, options, std::nullopt).context("fingerprint tree");
}

Result<DigestedTree> tree_digest_keeping_walk(const std::string& root, const TreeOptions& options,
                                              const DigestCacheContent* cache,
                                              const AwaitDigestCache& await_cache) {
  auto root_fd = SEALRUN_TRY_CTX(open_root(root), "fingerprint tree");
  DigestedTree out;
  out.tree =
      SEALRUN_TRY_CTX(walk_and_hash(root_fd.get(), root, options, std::nullopt, cache, await_cache),
                      "fingerprint tree");
  if (await_cache) cache = await_cache.wait();  // loaded by now: the walk waited for it
  if (out.tree.unchanged) {
    // Every record is the one the cache's digest was taken over, and there is no other: the
    // inventory's bytes, and so its digest, are the cache's.
    out.summary = TreeSummary{to_hex(cache->tree_sha256.data(), cache->tree_sha256.size()),
                              out.tree.entries, out.tree.regular_bytes};
    return out;
  }
  InventorySink sink;
  out.summary = SEALRUN_TRY_CTX(write_records(out.tree, sink), "fingerprint tree");
  return out;
}

}  // namespace sealrun
