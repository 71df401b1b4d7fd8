// evaluate_guards(): see guards.h.
#include "census/guards.h"

#include <fmt/format.h>

namespace sealrun::census {

std::string GuardTrip::describe() const {
  return fmt::format("{}: observed {} bytes, limit {} bytes (at {} ms)", name, observed, limit,
                     t_ms);
}

std::optional<GuardTrip> evaluate_guards(const GuardLimits& l, const Sample& s) {
  if (s.owned_bytes >= l.owned_max_bytes)
    return GuardTrip{"owned_max_bytes", l.owned_max_bytes, s.owned_bytes, s.t_ms};
  if (s.result_bytes >= l.result_max_bytes)
    return GuardTrip{"result_max_bytes", l.result_max_bytes, s.result_bytes, s.t_ms};
  if (s.free_bytes < l.free_min_bytes)
    return GuardTrip{"free_min_bytes", l.free_min_bytes, s.free_bytes, s.t_ms};
  uint64_t committed = s.owned_bytes + s.result_bytes + l.reserve_bytes;
  if (committed > l.ceiling_bytes)
    return GuardTrip{"ceiling_bytes", l.ceiling_bytes, committed, s.t_ms};
  return std::nullopt;
}

}  // namespace sealrun::census
