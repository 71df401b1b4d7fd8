// Tree digests through the digest cache: see cached_tree.h.
#include "fingerprint/cached_tree.h"

#include <fmt/format.h>

#include "fingerprint/digest_cache.h"
#include "fingerprint/tree_walk.h"

namespace sealrun {
namespace {

// Whether a walked file goes into the cache: its stamp can be trusted later (a file system with a
// true ctime) and is settled (a file changed in the second it was hashed would be hashed again
// anyway, so storing it would only cost space).
bool storable(const TreeEntry& e, const std::vector<FsIdentity>& filesystems) {
  return e.kind == EntryKind::kFile && e.fs != TreeEntry::kNoFs &&
         e.path.size() <= kDigestCacheMaxPathBytes &&
         ctime_is_trustworthy(filesystems[e.fs].type) && stamp_is_settled(e.stamp);
}

DigestCacheContent cache_of(const std::string& root, const DigestedTree& walked) {
  DigestCacheContent out;
  out.root = root;
  out.filesystems = walked.tree.filesystems;
  out.files.reserve(walked.tree.files);
  for (const TreeEntry* e : walked.tree.order) {
    if (!storable(*e, out.filesystems)) continue;
    CachedFile& f = out.files.emplace_back();
    f.path = e->path;
    f.fs = e->fs;
    f.stamp = e->stamp;
    f.sha256 = e->sha256;
  }
  return out;
}

// Whether the cache on disk already says exactly what a fresh one would: every file it lists was
// verified by stat (so with the same stamp and digest), and no other file would be stored.
bool cache_is_current(const DigestCacheContent& loaded, const DigestedTree& walked) {
  if (walked.tree.files_from_cache != loaded.files.size() ||
      loaded.filesystems != walked.tree.filesystems)
    return false;
  for (const TreeEntry* e : walked.tree.order)
    if (!e->from_cache && storable(*e, walked.tree.filesystems)) return false;
  return true;
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

  const DigestCacheContent& known = cache.content;
  const DigestLookup lookup = [&known](std::string_view rel, const struct stat& st,
                                       const FsIdentity& fs) -> std::optional<ReusedDigest> {
    const CachedFile* c = known.find(rel);
    if (c == nullptr || !stamp_still_holds(c->stamp, known.filesystems[c->fs], st, fs))
      return std::nullopt;
    return ReusedDigest{c->sha256, c->stamp};
  };
  const bool use_cache = cache.state == LoadedDigestCache::State::kLoaded;
  auto walked = SEALRUN_TRY(
      tree_digest_keeping_walk(request.root, request.tree, use_cache ? &lookup : nullptr));

  record.entries = walked.summary.entries;
  record.files = walked.tree.files;
  record.checked_by_stat = walked.tree.files_from_cache;
  record.rehashed = walked.tree.files - walked.tree.files_from_cache;
  if (use_cache && record.rehashed > 0) record.status = PinCacheStatus::kPartial;

  if (request.expected_sha256 && walked.summary.sha256 != *request.expected_sha256 &&
      record.checked_by_stat > 0) {
    // The cache must never be the reason a pin fails: confirm from the bytes themselves.
    auto full = SEALRUN_TRY(tree_digest_keeping_walk(request.root, request.tree, nullptr));
    record.rehashed += full.tree.files;
    record.reason = "the digest differed from the pin with cached file digests; every file was "
                    "hashed again to confirm";
    walked = std::move(full);
    record.entries = walked.summary.entries;
    record.files = walked.tree.files;
  }
  out.summary = walked.summary;

  if (request.state_dir.empty()) return out;
  if (!cache.directory_trusted) return out;  // nothing is written into an untrusted directory
  if (use_cache && cache_is_current(known, walked)) return out;
  Status stored = store_digest_cache(request.state_dir, cache_of(request.root, walked));
  record.stored = stored.ok();
  if (!stored.ok()) {
    record.reason += record.reason.empty() ? "" : "; ";
    record.reason += "not stored: " + stored.error().message();
  }
  return out;
}

}  // namespace sealrun
