// SPDX-License-Identifier: Apache-2.0
// Re-verifying a pinned tree through the digest cache against hashing it in full, for
// bench/README.md ("Digest cache"). One run of one mode per process, so that an outside timer
// (time, hyperfine, the bench script) measures the whole cost, start-up included:
//
//   verify_tree_bench cached ROOT STATE_DIR   tree_digest_cached(): stat walk + cache
//   verify_tree_bench rehash ROOT STATE_DIR   the same with --rehash (cache bypassed, refreshed)
//   verify_tree_bench full ROOT               tree_digest(): what every run paid before the cache
//   verify_tree_bench load ROOT STATE_DIR     load_digest_cache() alone (map, check, index)
//
// Prints the digest and, for the cached modes, the pin_cache record as JSON. VERIFY_THREADS=N sets
// the cached modes' walker threads (default: one per CPU).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "fingerprint/cached_tree.h"
#include "fingerprint/digest_cache.h"
#include "fingerprint/tree.h"

int main(int argc, char** argv) {
  using namespace sealrun;
  const std::string mode = argc > 1 ? argv[1] : "";
  if (!((mode == "full" && argc == 3) ||
        ((mode == "cached" || mode == "rehash" || mode == "load") && argc == 4))) {
    std::fprintf(stderr, "usage: %s cached|rehash|load ROOT STATE_DIR | full ROOT\n", argv[0]);
    return 2;
  }
  if (mode == "full") {
    auto summary = tree_digest(argv[2]);
    if (!summary.ok()) {
      std::fprintf(stderr, "%s\n", summary.error().message().c_str());
      return 1;
    }
    std::printf("%s\n", summary->sha256.c_str());
    return 0;
  }
  if (mode == "load") {
    const LoadedDigestCache loaded = load_digest_cache(argv[3], argv[2]);
    std::printf("%zu entries %s\n", loaded.content.entries.size(), loaded.reason.c_str());
    return loaded.state == LoadedDigestCache::State::kLoaded ? 0 : 1;
  }
  CachedTreeRequest request;
  request.root = argv[2];
  request.state_dir = argv[3];
  request.rehash = mode == "rehash";
  if (const char* t = std::getenv("VERIFY_THREADS")) request.tree.threads = std::atoi(t);
  auto result = tree_digest_cached(request);
  if (!result.ok()) {
    std::fprintf(stderr, "%s\n", result.error().message().c_str());
    return 1;
  }
  std::printf("%s %s\n", result->summary.sha256.c_str(),
              pin_cache_to_json(result->pin_cache).dump().c_str());
  return 0;
}
