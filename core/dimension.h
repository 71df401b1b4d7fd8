// SPDX-License-Identifier: Apache-2.0
// The dimensions of containment: what a grant can say is enforced. A closed set; names are the
// spelling used in admissions, grants, receipts and `sealrun probe`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sealrun {

enum class Dimension : uint8_t {
  kFilesystem,    // "filesystem": read-only root/source/toolchain, only admitted mounts writable
  kProcessTree,   // "process_tree": own pid namespace, nothing outlives the sandbox
  kWallClock,     // "wall_clock": the job is stopped at its time limit
  kNetwork,       // "network": no network (own empty net namespace)
  kMemory,        // "memory": memory.max / memory.high / no swap via a resource group
  kProcessCount,  // "process_count": a pids limit via a resource group
  kSyscalls,      // "syscalls": the seccomp policy is installed
  kCapabilities,  // "capabilities": no capabilities, no_new_privs
};
inline constexpr int kDimensionCount = 8;

std::string_view dimension_name(Dimension d);
std::optional<Dimension> parse_dimension(std::string_view name);

// A set of dimensions as a bit mask; iteration is in enum order, so output is stable.
class DimensionSet {
 public:
  DimensionSet() = default;
  DimensionSet(std::initializer_list<Dimension> dims) {
    for (auto d : dims) insert(d);
  }
  static DimensionSet all();
  void insert(Dimension d) { bits_ |= bit(d); }
  void erase(Dimension d) { bits_ &= static_cast<uint16_t>(~bit(d)); }
  bool contains(Dimension d) const { return (bits_ & bit(d)) != 0; }
  bool empty() const { return bits_ == 0; }
  bool subset_of(const DimensionSet& o) const { return (bits_ & ~o.bits_) == 0; }
  DimensionSet operator&(const DimensionSet& o) const { return from_bits(bits_ & o.bits_); }
  DimensionSet operator|(const DimensionSet& o) const { return from_bits(bits_ | o.bits_); }
  DimensionSet operator-(const DimensionSet& o) const { return from_bits(bits_ & ~o.bits_); }
  bool operator==(const DimensionSet& o) const = default;
  std::vector<Dimension> list() const;
  std::vector<std::string> names() const;
  std::string joined() const;  // "memory, network"

 private:
  static uint16_t bit(Dimension d) { return static_cast<uint16_t>(1u << static_cast<unsigned>(d)); }
  static DimensionSet from_bits(unsigned b) {
    DimensionSet s;
    s.bits_ = static_cast<uint16_t>(b);
    return s;
  }
  uint16_t bits_ = 0;
};

}  // namespace sealrun
