// SPDX-License-Identifier: Apache-2.0
// A fresh temporary directory per test (core's ScopedTempDir, which removes it with everything in
// it afterwards), small file helpers, and the job user the tests run jobs as. Shared by every
// module's tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "core/job_user.h"

namespace sealrun {
class ScopedTempDir;
}

namespace sealrun::testing {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }
  std::string operator/(const std::string& rel) const { return (path_ / rel).string(); }

 private:
  std::filesystem::path path_;
  std::unique_ptr<ScopedTempDir> path_keep_;
};

// Writes `bytes` to `path` (creating or truncating it).
void write_text(const std::string& path, const std::string& bytes);
// The whole content of `path`.
std::string read_text(const std::string& path);
// `n` bytes of a fixed pseudo-random pattern (a linear congruential generator from `seed`): file
// contents whose digest depends on every byte and its place.
std::string pattern_bytes(size_t n, uint32_t seed);

// The job user's name for tests: $SEALRUN_JOB_USER, else "sealrun" (what .ci/setup creates).
// Libraries never read the environment; tests, like the controller, pass the name in.
std::string test_job_user_name();

}  // namespace sealrun::testing
