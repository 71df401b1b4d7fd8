// One growth-census observation and the decimation that keeps a long run's samples bounded: the
// first and last samples and the peak of each series always survive, the rest are thinned evenly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace sealrun::census {

struct Sample {
  int64_t t_ms = 0;           // since the census started
  uint64_t owned_bytes = 0;   // allocated bytes of the owned tree
  uint64_t result_bytes = 0;  // allocated bytes of the result tree
  uint64_t free_bytes = 0;    // free bytes on the filesystem of the owned tree
};

// Keeps at most `keep` samples (at least first, last and the peaks: up to 5). Returns how many
// were dropped.
uint64_t decimate_samples(std::vector<Sample>& samples, size_t keep);

}  // namespace sealrun::census
