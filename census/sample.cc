// decimate_samples(): see sample.h.
#include "census/sample.h"

#include <algorithm>

namespace sealrun::census {

uint64_t decimate_samples(std::vector<Sample>& samples, size_t keep) {
  if (samples.size() <= keep) return 0;
  size_t n = samples.size();
  std::vector<bool> pinned(n, false);
  pinned[0] = pinned[n - 1] = true;
  auto pin_peak = [&](auto key) {
    size_t best = 0;
    for (size_t i = 1; i < n; ++i)
      if (key(samples[i]) > key(samples[best])) best = i;
    pinned[best] = true;
  };
  pin_peak([](const Sample& s) { return s.owned_bytes; });
  pin_peak([](const Sample& s) { return s.result_bytes; });
  pin_peak([](const Sample& s) { return s.owned_inodes; });
  pin_peak([](const Sample& s) { return ~s.free_bytes; });  // the lowest free space
  pin_peak([](const Sample& s) { return s.memory_bytes.value_or(0); });
  size_t pinned_count = static_cast<size_t>(std::count(pinned.begin(), pinned.end(), true));
  size_t extra = keep > pinned_count ? keep - pinned_count : 0;
  for (size_t k = 1; k <= extra; ++k) pinned[(n - 1) * k / (extra + 1)] = true;
  std::vector<Sample> kept;
  kept.reserve(keep);
  for (size_t i = 0; i < n; ++i)
    if (pinned[i]) kept.push_back(samples[i]);
  uint64_t dropped = n - kept.size();
  samples = std::move(kept);
  return dropped;
}

}  // namespace sealrun::census
