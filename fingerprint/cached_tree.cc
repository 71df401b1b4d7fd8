// SPDX-License-Identifier: Apache-2.0
// Tree digests through the digest cache: see cached_tree.h.
#include "fingerprint/cached_tree.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <optional>
#include <thread>

#include "core/hex.h"
#include "fingerprint/digest_cache.h"
#include "fingerprint/tree_walk.h"

namespace sealrun {
namespace {

// Whether a walked entry goes into the cache. A directory always can (its record is checked from
// a fresh stat). A file or symlink only if its stamp can be trusted later: on a file system with
// a true ctime, and settled (one changed in the second it was read would be read again anyway,
// so storing it would only cost space; and then the tree, lacking it, is never taken as
// unchanged, which is right).
bool storable(const TreeEntry& e, const std::vector<FsIdentity>& filesystems) {
  if (e.fs == TreeEntry::kNoFs || e.path.size() > kDigestCacheMaxPathBytes) return false;
  if (e.kind == EntryKind::kDirectory) return true;
  return ctime_is_trustworthy(filesystems[e.fs].type) && stamp_is_settled(e.stamp);
}

DigestCacheInput cache_of(const std::string& root, const DigestedTree& walked) {
  DigestCacheInput out;
  out.root = root;
  const std::string digest = from_hex(walked.summary.sha256).value_or(std::string());
  if (digest.size() == out.tree_sha256.size())
    std::copy(digest.begin(), digest.end(), out.tree_sha256.begin());
  out.filesystems = walked.tree.filesystems;
  out.entries.reserve(walked.tree.entries);
  // Every directory may be listed; the encoder does not list one with a child left out.
  auto add = [&](const TreeEntry* e) {
    if (!storable(*e, out.filesystems)) {
      out.left_out.push_back(e->path);
      return;
    }
    DigestCacheInput::Entry& c = out.entries.emplace_back();
    c.path = e->path;
    c.record.kind = e->kind;
    if (e->kind == EntryKind::kDirectory) c.record.flags = CachedEntry::kListed;
    c.record.mode = e->mode;
    c.record.uid = e->uid;
    c.record.gid = e->gid;
    c.record.fs = e->fs;
    c.record.stamp = e->stamp;
    if (e->kind == EntryKind::kFile) c.record.sha256 = e->sha256;
  };
  // The inventory's order but for "." (first there), which the cache keeps in byte order.
  const auto& order = walked.tree.order;
  bool root_added = false;
  for (size_t i = 1; i < order.size(); ++i) {
    if (!root_added && std::string_view(".") < order[i]->path) {
      add(order[0]);
      root_added = true;
    }
    add(order[i]);
  }
  if (!root_added && !order.empty()) add(order[0]);
  return out;
}

// Whether a cache file for `root` is there at all (a hint: load_digest_cache decides the rest).
bool digest_cache_present(const std::string& state_dir, const std::string& root) {
  struct stat st {};
  return ::fstatat(AT_FDCWD, digest_cache_path(state_dir, root).c_str(), &st,
                   AT_SYMLINK_NOFOLLOW) == 0;
}

// load_digest_cache() on a thread of its own (or on the caller's: `threaded` false, or no thread
// to be had). A cache of /usr takes ~50 ms to read, check and index: serial time before the walk
// could begin, now spent while it stats the tree. Always joined before it is destroyed.
class CacheLoader {
 public:
  CacheLoader(std::string state_dir, std::string root, bool threaded)
      : state_dir_(std::move(state_dir)), root_(std::move(root)) {
    if (threaded) {
      try {
        thread_ = std::thread([this] {
          cache_ = load_digest_cache(state_dir_, root_);
          done_.store(true, std::memory_order_release);
        });
        return;
      } catch (...) {  // no thread: load here
      }
    }
    cache_ = load_digest_cache(state_dir_, root_);
  }
  CacheLoader(const CacheLoader&) = delete;
  CacheLoader& operator=(const CacheLoader&) = delete;
  ~CacheLoader() { wait(); }
  LoadedDigestCache& wait() {
    if (thread_.joinable()) thread_.join();
    return cache_;
  }
  // The cache if it has loaded by now, else null (still loading, or nothing to use); any thread.
  const DigestCacheContent* ready() const {
    if (thread_.get_id() == std::thread::id() || done_.load(std::memory_order_acquire))
      return cache_.state == LoadedDigestCache::State::kLoaded ? &cache_.content : nullptr;
    return nullptr;
  }

 private:
  const std::string state_dir_;
  const std::string root_;
  LoadedDigestCache cache_;
  std::atomic<bool> done_{false};  // cache_ is final (set by the loading thread)
  std::thread thread_;             // last: started once the members it uses exist
};

}  // namespace

std::string_view pin_cache_status_name(PinCacheStatus status) {
  switch (status) {
    case PinCacheStatus::kHit:
      return "hit";
    case PinCacheStatus::kPartial:
      return "partial";
    case PinCacheStatus::kMiss:
      return "miss";
    case PinCacheStatus::kCorrupt:
      return "corrupt";
    case PinCacheStatus::kIgnored:
      return "ignored";
    case PinCacheStatus::kBypassed:
      return "bypassed";
  }
  return "?";
}

nlohmann::json pin_cache_to_json(const PinCacheRecord& r) {
  nlohmann::json j = {{"root", r.root},
                      {"status", std::string(pin_cache_status_name(r.status))},
                      {"entries", r.entries},
                      {"files", r.files},
                      {"checked_by_stat", r.checked_by_stat},
                      {"rehashed", r.rehashed},
                      {"digest_from_cache", r.digest_from_cache},
                      {"stored", r.stored}};
  if (!r.reason.empty()) j["reason"] = r.reason;
  return j;
}

Result<CachedTreeResult> tree_digest_cached(const CachedTreeRequest& request) {
  CachedTreeResult out;
  PinCacheRecord& record = out.pin_cache;
  record.root = request.root;

  const bool bypass = request.rehash || request.state_dir.empty();
  // A cache file that is there is loaded while the walk stats the tree (the walk compares the two
  // afterwards); a missing one is found missing at once, and the walk hashes as it goes.
  const bool present = !bypass && digest_cache_present(request.state_dir, request.root);
  std::optional<CacheLoader> loader;
  if (!bypass) loader.emplace(request.state_dir, request.root, present);
  AwaitDigestCache await;
  if (present) {
    await.ready = [&loader] { return loader->ready(); };
    await.wait = [&loader]() -> const DigestCacheContent* {
      LoadedDigestCache& c = loader->wait();
      return c.state == LoadedDigestCache::State::kLoaded ? &c.content : nullptr;
    };
  }
  // Without a file there, the load is over already: the walk is given its (empty) result.
  LoadedDigestCache none;
  const LoadedDigestCache& before = loader && !present ? loader->wait() : none;
  const DigestCacheContent* given =
      before.state == LoadedDigestCache::State::kLoaded ? &before.content : nullptr;
  auto walked = SEALRUN_TRY(tree_digest_keeping_walk(request.root, request.tree, given, await));
  const LoadedDigestCache& loaded = loader ? loader->wait() : none;

  if (bypass) {
    record.status = PinCacheStatus::kBypassed;
    if (request.state_dir.empty()) record.reason = "no state directory: the cache is not used";
  } else {
    switch (loaded.state) {
      case LoadedDigestCache::State::kLoaded:
        record.status = PinCacheStatus::kHit;  // until a file has to be re-hashed
        break;
      case LoadedDigestCache::State::kMissing:
        record.status = PinCacheStatus::kMiss;
        break;
      case LoadedDigestCache::State::kCorrupt:
        record.status = PinCacheStatus::kCorrupt;
        break;
      case LoadedDigestCache::State::kIgnored:
        record.status = PinCacheStatus::kIgnored;
        break;
    }
    record.reason = loaded.reason;
  }
  const bool used_cache = loaded.state == LoadedDigestCache::State::kLoaded;

  record.entries = walked.summary.entries;
  record.files = walked.tree.files;
  record.checked_by_stat = walked.tree.files_from_cache;
  record.rehashed = walked.tree.files - walked.tree.files_from_cache;
  record.digest_from_cache = walked.tree.unchanged;
  if (used_cache && record.rehashed > 0) record.status = PinCacheStatus::kPartial;

  if (request.expected_sha256 && walked.summary.sha256 != *request.expected_sha256 &&
      record.checked_by_stat > 0) {
    // The cache must never be the reason a pin fails: confirm from the bytes themselves.
    auto full = SEALRUN_TRY(tree_digest_keeping_walk(request.root, request.tree, nullptr));
    record.rehashed += full.tree.files;
    record.reason =
        "the digest differed from the pin with cached file digests; every file was "
        "hashed again to confirm";
    record.digest_from_cache = false;
    walked = std::move(full);
    record.entries = walked.summary.entries;
    record.files = walked.tree.files;
  }
  out.summary = walked.summary;
  if (used_cache) out.loaded_before = loaded.content;

  if (request.state_dir.empty()) return out;
  if (!loaded.directory_trusted) return out;  // nothing is written into an untrusted directory
  if (used_cache && walked.tree.unchanged) return out;  // the cache says exactly this already
  Status stored = store_digest_cache(request.state_dir, cache_of(request.root, walked));
  record.stored = stored.ok();
  if (!stored.ok()) {
    record.reason += record.reason.empty() ? "" : "; ";
    record.reason += "not stored: " + stored.error().message();
  }
  return out;
}

Result<TreeSummary> tree_digest_reporting(
    const CachedTreeRequest& request, const std::function<void(const PinCacheRecord&)>& record) {
  auto cached = SEALRUN_TRY(tree_digest_cached(request));
  if (record) record(cached.pin_cache);
  return std::move(cached.summary);
}

}  // namespace sealrun
