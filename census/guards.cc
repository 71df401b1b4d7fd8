// SPDX-License-Identifier: Apache-2.0
// evaluate_guards(): see guards.h.
#include "census/guards.h"

#include <fmt/format.h>

namespace sealrun::census {

std::string GuardTrip::describe() const {
  if (census_failed())
    return fmt::format("{}: the growth census could not measure (at {} ms): {}", name, t_ms,
                       detail);
  const char* unit = name == "owned_max_inodes" ? "inodes" : "bytes";
  std::string out = fmt::format("{}: observed {} {}, limit {} {} (at {} ms)", name, observed, unit,
                                limit, unit, t_ms);
  if (!detail.empty()) out += "; " + detail;
  return out;
}

std::optional<GuardTrip> evaluate_guards(const GuardLimits& l, const Sample& s) {
  if (s.owned_bytes >= l.owned_max_bytes)
    return GuardTrip{"owned_max_bytes", l.owned_max_bytes, s.owned_bytes, s.t_ms, ""};
  if (s.owned_room_bytes < kFullRoomBytes)
    return GuardTrip{"owned_max_bytes", l.owned_max_bytes, s.owned_bytes, s.t_ms,
                     fmt::format("owned space full: the owned file system has {} bytes left "
                                 "(writes past the limit fail with ENOSPC)",
                                 s.owned_room_bytes)};
  if (s.owned_inodes >= l.owned_max_inodes)
    return GuardTrip{"owned_max_inodes", l.owned_max_inodes, s.owned_inodes, s.t_ms, ""};
  if (s.owned_room_inodes == 0)
    return GuardTrip{"owned_max_inodes", l.owned_max_inodes, s.owned_inodes, s.t_ms,
                     "owned space full: the owned file system has no inode left (creating a "
                     "file fails with ENOSPC)"};
  if (s.result_bytes >= l.result_max_bytes)
    return GuardTrip{"result_max_bytes", l.result_max_bytes, s.result_bytes, s.t_ms, ""};
  if (s.free_bytes < l.free_min_bytes)
    return GuardTrip{"free_min_bytes", l.free_min_bytes, s.free_bytes, s.t_ms, ""};
  uint64_t committed = s.owned_bytes + s.result_bytes + l.reserve_bytes;
  if (committed > l.ceiling_bytes)
    return GuardTrip{"ceiling_bytes", l.ceiling_bytes, committed, s.t_ms, ""};
  return std::nullopt;
}

}  // namespace sealrun::census
