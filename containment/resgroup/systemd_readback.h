// SPDX-License-Identifier: Apache-2.0
// The pure half of the systemd back end (minijail's util.c vs system.c split): the transient
// scope's name, the property list sent to StartTransientUnit (as data, so it is unit-tested without
// a manager), the decision of which limits the manager really applied given what its properties and
// the kernel's cgroup files say, and the parsing of the cgroup files behind the memory report.
// Nothing here talks to a bus or opens a file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "containment/resgroup/resource_group.h"
#include "core/result.h"

namespace sealrun::resgroup::systemd {

// "sealrun-<run_id>.scope", or an error naming the run id and the allowed characters.
Result<std::string> scope_unit_name(std::string_view run_id);

// One (sv) entry of StartTransientUnit's property array.
struct UnitProperty {
  std::string name;
  std::variant<uint64_t, bool, std::string, std::vector<uint32_t>> value;
  // The D-Bus signature of the variant's content: "t", "b", "s" or "au".
  std::string signature() const;
};

// The scope holds the job and sealrun's keeper process (see systemd_scope.cc): TasksMax is the
// admitted pids_max plus this many.
inline constexpr uint64_t kKeeperTasks = 1;
// pids_max + kKeeperTasks, except that "no limit" (UINT64_MAX, systemd's infinity) stays no limit.
constexpr uint64_t tasks_max_for(uint64_t pids_max) {
  return pids_max >= UINT64_MAX - kKeeperTasks ? UINT64_MAX : pids_max + kKeeperTasks;
}

// PIDs, Description, Delegate=yes, CollectMode=inactive-or-failed, MemoryAccounting,
// TasksAccounting, MemoryHigh, MemoryMax, MemorySwapMax, TasksMax (= pids_max + kKeeperTasks).
std::vector<UnitProperty> scope_properties(const GroupLimits& limits,
                                           const std::vector<uint32_t>& pids,
                                           const std::string& description);

// Which cgroup layout the manager's controllers live on.
enum class CgroupMode { kLegacy, kUnified };  // kLegacy: v1 controllers (legacy or hybrid)
std::string_view cgroup_mode_name(CgroupMode mode);

// Everything read back for one scope: the manager's view (unit properties) and the kernel's
// (cgroup files; nullopt where a file is absent or unreadable).
struct ScopeObservation {
  CgroupMode mode = CgroupMode::kLegacy;
  std::optional<uint64_t> property_memory_high;
  std::optional<uint64_t> property_memory_max;
  std::optional<uint64_t> property_swap_max;
  std::optional<uint64_t> property_tasks_max;
  std::optional<uint64_t> file_memory_high;  // v2 memory.high (v1 has none)
  std::optional<uint64_t> file_memory_max;   // v1 memory.limit_in_bytes, v2 memory.max
  std::optional<uint64_t> file_swap_max;     // v1 memory.memsw.limit_in_bytes, v2 memory.swap.max
  std::optional<uint64_t> file_pids_max;     // pids.max
};

// One LimitReadback per limit ("memory_high_bytes", "memory_max_bytes", "swap_max_bytes",
// "pids_max"). A limit counts as applied only when the kernel's file holds it (rounded down to
// `page_size`, as the kernel stores it); a property the manager merely stored is not enough. On v1
// MemoryHigh and MemorySwapMax are never applied: systemd keeps them as unit settings but writes no
// cgroup file for them, and the note says so.
std::vector<LimitReadback> evaluate_readback(const GroupLimits& requested,
                                             const ScopeObservation& observed, uint64_t page_size);

// Cgroup file parsing. "max" (v2) → UINT64_MAX; v1's "unlimited" (anything at or above
// PAGE_COUNTER_MAX pages, e.g. 9223372036854771712) → UINT64_MAX as well.
std::optional<uint64_t> parse_limit(std::string_view text);
// "key value" lines → value of `key`, nullopt when absent or malformed.
std::optional<uint64_t> flat_keyed_value(std::string_view text, std::string_view key);

struct V1MemoryFiles {
  std::optional<std::string> max_usage_in_bytes;
  std::optional<std::string> failcnt;
  std::optional<std::string> oom_control;
};
MemoryReport memory_report_v1(const V1MemoryFiles& files);

struct V2MemoryFiles {
  std::optional<std::string> peak;
  std::optional<std::string> events;
  std::optional<std::string> swap_current;
};
MemoryReport memory_report_v2(const V2MemoryFiles& files);

}  // namespace sealrun::resgroup::systemd
