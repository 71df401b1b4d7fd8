// The memory a resource group uses right now, for the census's samples: one cgroup counter file
// (v2 memory.current, v1 memory.usage_in_bytes) opened once and re-read at offset 0 at every
// sample, so a sample costs one pread(2) and never a path lookup. The census keeps no authority
// over the group: the descriptor only reads, and a group that is gone reads as "not measured".
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include "core/result.h"
#include "core/unique_fd.h"

namespace sealrun::census {

// The decimal counter in the file `fd` refers to, read from offset 0 ("123456\n"); nullopt when
// it cannot be read or is not a number.
std::optional<uint64_t> read_counter_file(int fd);

// A reader for CensusConfig::memory_usage: `open` is called at the first read and again at each
// later read until it succeeds (a systemd scope has its cgroup only once the job is in it); the
// descriptor it returns is then read at every call. Not for concurrent calls (the census never
// makes them).
std::function<std::optional<uint64_t>()> counter_reader(std::function<Result<UniqueFd>()> open);

}  // namespace sealrun::census
