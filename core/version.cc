// SPDX-License-Identifier: Apache-2.0
// Formatting of the build's version (core/version.h); the values themselves are generated.
#include "core/version.h"

namespace sealrun {

std::string version_text(const SealrunVersion& v) {
  std::string out(v.version);
  out.append(" (commit ").append(v.commit);
  if (v.dirty) out.append(", dirty");
  out.append(")");
  return out;
}

}  // namespace sealrun
