// Tree digests through the digest cache: see cached_tree.h.
#include "fingerprint/cached_tree.h"

#include <fmt/format.h>

#include <algorithm>

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

DigestCacheContent cache_of(const std::string& root, const DigestedTree& walked) {
  DigestCacheContent out;
  out.root = root;
  const std::string digest = from_hex(walked.summary.sha256).value_or(std::string());
  if (digest.size() == out.tree_sha256.size())
    std::copy(digest.begin(), digest.end(), out.tree_sha256.begin());
  out.filesystems = walked.tree.filesystems;
  out.entries.reserve(walked.tree.entries);
  auto add = [&](const TreeEntry* e) {
    if (!storable(*e, out.filesystems)) return;
    CachedEntry& c = out.entries.emplace_back();
    c.path = e->path;
    c.kind = e->kind;
    c.mode = e->mode;
    c.uid = e->uid;
    c.gid = e->gid;
    c.fs = e->fs;
    c.stamp = e->stamp;
    if (e->kind == EntryKind::kFile) c.sha256 = e->sha256;
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

  LoadedDigestCache cache;
  if (request.rehash || request.state_dir.empty()) {
    record.status = PinCacheStatus::kBypassed;
    if (request.state_dir.empty()) record.reason = "no state directory: the cache is not used";
  } else {
    cache = load_digest_cache(request.state_dir, request.root);
    switch (cache.state) {
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
    record.reason = cache.reason;
  }

  const bool use_cache = cache.state == LoadedDigestCache::State::kLoaded;
  auto walked = SEALRUN_TRY(
      tree_digest_keeping_walk(request.root, request.tree, use_cache ? &cache.content : nullptr));

  record.entries = walked.summary.entries;
  record.files = walked.tree.files;
  record.checked_by_stat = walked.tree.files_from_cache;
  record.rehashed = walked.tree.files - walked.tree.files_from_cache;
  record.digest_from_cache = walked.tree.unchanged;
  if (use_cache && record.rehashed > 0) record.status = PinCacheStatus::kPartial;

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

  if (request.state_dir.empty()) return out;
  if (!cache.directory_trusted) return out;  // nothing is written into an untrusted directory
  if (use_cache && walked.tree.unchanged) return out;  // the cache says exactly this already
  Status stored = store_digest_cache(request.state_dir, cache_of(request.root, walked));
  record.stored = stored.ok();
  if (!stored.ok()) {
    record.reason += record.reason.empty() ? "" : "; ";
    record.reason += "not stored: " + stored.error().message();
  }
  return out;
}

Result<TreeSummary> tree_digest_reporting(const CachedTreeRequest& request,
                                          const std::function<void(const PinCacheRecord&)>& record) {
  auto cached = SEALRUN_TRY(tree_digest_cached(request));
  if (record) record(cached.pin_cache);
  return std::move(cached.summary);
}

}  // namespace sealrun
