// SPDX-License-Identifier: Apache-2.0
// shell(): see shell.h.
#include "tests/packaging/shell.h"

#include <gtest/gtest.h>

namespace sealrun::testing {

Captured shell(const std::string& script, const std::string& cwd, int64_t timeout_ms) {
  SpawnOptions o;
  o.argv = {"/bin/bash", "--norc", "--noprofile", "-c", "set -euo pipefail\n" + script};
  o.cwd = cwd;
  o.die_with_parent = true;
  auto r = run_capture(o, timeout_ms, 16 * 1024 * 1024);
  EXPECT_TRUE(r.ok()) << "cannot run bash: " << r.error().message();
  if (!r.ok()) return Captured{};
  EXPECT_FALSE(r->timed_out) << "timed out after " << timeout_ms << " ms:\n" << script;
  return *r;
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace sealrun::testing
