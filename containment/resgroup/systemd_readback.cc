// SPDX-License-Identifier: Apache-2.0
// See systemd_readback.h. Pure code: the scope's name and properties as data, and the decisions
// about what the manager applied, so they are table-tested without a manager.
#include "containment/resgroup/systemd_readback.h"

#include <fmt/format.h>

#include <charconv>

#include "core/decimal.h"
#include "core/run_id.h"

namespace sealrun::resgroup::systemd {
namespace {

// The kernel's "no limit" on v1 is PAGE_COUNTER_MAX pages, printed in bytes: LONG_MAX rounded down
// to a page (9223372036854771712 with 4 KiB pages). Anything this large is no limit at all.
constexpr uint64_t kV1UnlimitedThreshold = 0x7fffffffffff0000ULL;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}

std::optional<uint64_t> parse_u64(std::string_view s) { return parse_decimal<uint64_t>(trim(s)); }

std::string show(std::optional<uint64_t> v) {
  if (!v) return "unreadable";
  if (*v == UINT64_MAX) return "infinity";
  return std::to_string(*v);
}

// What the kernel stores for a requested byte limit: rounded down to whole pages.
uint64_t as_kernel_stores(uint64_t requested, uint64_t page_size) {
  if (requested == UINT64_MAX || page_size == 0) return requested;
  return requested / page_size * page_size;
}

LimitReadback byte_limit(std::string name, uint64_t requested, std::optional<uint64_t> file,
                         std::optional<uint64_t> property, std::string_view file_name,
                         uint64_t page_size) {
  LimitReadback r{std::move(name), requested, file, false, ""};
  if (!file) {
    r.observed = property;
    r.note = fmt::format("{} could not be read; the manager's property says {}", file_name,
                         show(property));
    return r;
  }
  r.applied = *file == as_kernel_stores(requested, page_size);
  if (!r.applied) {
    r.note = fmt::format("{} holds {}, not the requested {} (manager property: {})", file_name,
                         show(file), requested, show(property));
  }
  return r;
}

}  // namespace

Result<std::string> scope_unit_name(std::string_view run_id) {
  if (!is_valid_run_id(run_id)) {
    return Error::make(fmt::format(
        "run id \"{}\" cannot name a systemd scope: use 1-100 characters of [A-Za-z0-9_.-]",
        run_id));
  }
  return fmt::format("sealrun-{}.scope", run_id);
}

std::string UnitProperty::signature() const {
  switch (value.index()) {
    case 0:
      return "t";
    case 1:
      return "b";
    case 2:
      return "s";
    default:
      return "au";
  }
}

std::vector<UnitProperty> scope_properties(const GroupLimits& limits,
                                           const std::vector<uint32_t>& pids,
                                           const std::string& description) {
  return {
      {"Description", description},
      {"PIDs", pids},
      // The job may make its own sub-groups (a container runtime does); systemd must not fight it.
      {"Delegate", true},
      // A failed scope is garbage-collected too, so a run never leaves a unit behind.
      {"CollectMode", std::string("inactive-or-failed")},
      {"MemoryAccounting", true},
      {"TasksAccounting", true},
      {"MemoryHigh", limits.memory_high_bytes},
      {"MemoryMax", limits.memory_max_bytes},
      {"MemorySwapMax", limits.swap_max_bytes},
      {"TasksMax", tasks_max_for(limits.pids_max)},
  };
}

std::string_view cgroup_mode_name(CgroupMode mode) {
  return mode == CgroupMode::kUnified ? "cgroup-v2" : "cgroup-v1";
}

std::vector<LimitReadback> evaluate_readback(const GroupLimits& requested,
                                             const ScopeObservation& o, uint64_t page_size) {
  std::vector<LimitReadback> out;
  if (o.mode == CgroupMode::kLegacy) {
    // systemd 252 on v1 writes MemoryMax to memory.limit_in_bytes and nothing for MemoryHigh or
    // MemorySwapMax (there is no v1 file with their meaning); it still accepts and shows them.
    out.push_back({"memory_high_bytes", requested.memory_high_bytes, o.property_memory_high, false,
                   "cgroup v1: the manager stores MemoryHigh but the kernel has no memory.high; "
                   "not enforced"});
    out.push_back(byte_limit("memory_max_bytes", requested.memory_max_bytes, o.file_memory_max,
                             o.property_memory_max, "memory.limit_in_bytes", page_size));
    out.push_back({"swap_max_bytes", requested.swap_max_bytes, o.property_swap_max, false,
                   fmt::format("cgroup v1: the manager does not apply MemorySwapMax "
                               "(memory.memsw.limit_in_bytes is {}); swap is not limited",
                               show(o.file_swap_max))});
  } else {
    out.push_back(byte_limit("memory_high_bytes", requested.memory_high_bytes, o.file_memory_high,
                             o.property_memory_high, "memory.high", page_size));
    out.push_back(byte_limit("memory_max_bytes", requested.memory_max_bytes, o.file_memory_max,
                             o.property_memory_max, "memory.max", page_size));
    // memory.swap.max is in bytes but not page-rounded in what it reports for 0 or "max".
    out.push_back(byte_limit("swap_max_bytes", requested.swap_max_bytes, o.file_swap_max,
                             o.property_swap_max, "memory.swap.max", page_size));
  }
  // TasksMax holds pids_max plus sealrun's keeper; the job itself gets exactly pids_max.
  LimitReadback pids{"pids_max", requested.pids_max, o.file_pids_max, false, ""};
  if (!o.file_pids_max) {
    pids.observed = o.property_tasks_max;
    pids.note =
        fmt::format("pids.max could not be read; TasksMax is {}", show(o.property_tasks_max));
  } else {
    pids.applied = *o.file_pids_max == tasks_max_for(requested.pids_max);
    pids.note = pids.applied
                    ? fmt::format("pids.max is {}: {} for the job and {} for sealrun's keeper",
                                  *o.file_pids_max, requested.pids_max, kKeeperTasks)
                    : fmt::format("pids.max holds {}, expected {} (+{} keeper)",
                                  show(o.file_pids_max), requested.pids_max, kKeeperTasks);
  }
  out.push_back(std::move(pids));
  return out;
}

std::optional<uint64_t> parse_limit(std::string_view text) {
  text = trim(text);
  if (text == "max") return UINT64_MAX;
  auto v = parse_u64(text);
  if (v && *v >= kV1UnlimitedThreshold) return UINT64_MAX;
  return v;
}

std::optional<uint64_t> flat_keyed_value(std::string_view text, std::string_view key) {
  while (!text.empty()) {
    size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    size_t sp = line.find(' ');
    if (sp != std::string_view::npos && line.substr(0, sp) == key) {
      return parse_u64(line.substr(sp + 1));
    }
  }
  return std::nullopt;
}

MemoryReport memory_report_v1(const V1MemoryFiles& f) {
  MemoryReport r;
  if (f.max_usage_in_bytes) r.peak_bytes = parse_u64(*f.max_usage_in_bytes);
  // failcnt: how often usage hit memory.limit_in_bytes — v1's nearest to v2's "max" event.
  if (f.failcnt) r.events_max = parse_u64(*f.failcnt).value_or(0);
  if (f.oom_control) {
    r.events_oom_kill = flat_keyed_value(*f.oom_control, "oom_kill").value_or(0);
    // v1 counts only kills, not OOM situations; each kill was one.
    r.events_oom = r.events_oom_kill;
  }
  return r;
}

MemoryReport memory_report_v2(const V2MemoryFiles& f) {
  MemoryReport r;
  if (f.peak) r.peak_bytes = parse_u64(*f.peak);
  if (f.events) {
    r.events_high = flat_keyed_value(*f.events, "high").value_or(0);
    r.events_max = flat_keyed_value(*f.events, "max").value_or(0);
    r.events_oom = flat_keyed_value(*f.events, "oom").value_or(0);
    r.events_oom_kill = flat_keyed_value(*f.events, "oom_kill").value_or(0);
  }
  if (f.swap_current) r.swap_used_bytes = parse_u64(*f.swap_current);
  return r;
}

}  // namespace sealrun::resgroup::systemd
