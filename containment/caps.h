// SPDX-License-Identifier: Apache-2.0
// Capabilities and the other per-process security state a job must run with: empty effective,
// permitted, bounding and ambient sets, no_new_privs, a seccomp filter. Parsed from
// /proc/<pid>/status (the kernel's own report, so the probe checks what is, not what was asked),
// and the controller's own state through libcap.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"

namespace sealrun {

struct SecurityStatus {
  std::optional<uint64_t> cap_inh, cap_prm, cap_eff, cap_bnd, cap_amb;
  std::optional<int> no_new_privs;  // "NoNewPrivs:"
  std::optional<int> seccomp;       // "Seccomp:" 0 off, 1 strict, 2 filter
  // Every capability set present and zero (Inh is not required: it grants nothing by itself).
  bool no_capabilities() const;
  // What is wrong, for a person ("CapBnd 000001ffffffffff, NoNewPrivs 0"); empty when all is well.
  std::string problems() const;
};

// Parses the text of /proc/<pid>/status (pure).
SecurityStatus parse_security_status(std::string_view status_text);

// The calling process's capability sets in libcap's text form ("=" when empty), via cap_get_proc
// held in RAII.
Result<std::string> own_capabilities_text();

}  // namespace sealrun
