// SPDX-License-Identifier: Apache-2.0
// Error::message(): the one place that joins a context chain into a sentence.
#include "core/result.h"

#include <cstdio>
#include <cstring>

namespace sealrun {

std::string Error::message() const {
  std::string out;
  for (const auto& layer : chain_) {
    if (!out.empty()) out += ": ";
    out += layer;
  }
  if (err_ != 0) {
    out += ": ";
    out += errno_text(err_);
  }
  return out;
}

const char* errno_text(int err) {
  // strerrordesc_np (glibc 2.32) returns a string constant, or nullptr for an unknown value.
  if (const char* text = ::strerrordesc_np(err)) return text;
  static thread_local char unknown[32];
  std::snprintf(unknown, sizeof unknown, "errno %d", err);
  return unknown;
}

}  // namespace sealrun
