// SPDX-License-Identifier: Apache-2.0
// TempDir and small file helpers for tests.
#include "tests/support/temp_dir.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "core/temp_dir.h"

namespace sealrun::testing {

TempDir::TempDir() {
  auto dir = ScopedTempDir::create("sealrun-test");
  if (!dir) throw std::runtime_error(dir.error().message());
  path_ = dir->path();
  // Ownership passes to this object: the ScopedTempDir must not remove it now.
  path_keep_ = std::make_unique<ScopedTempDir>(std::move(*dir));
}

TempDir::~TempDir() = default;

void write_text(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  if (!out) throw std::runtime_error("write_text failed: " + path);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string pattern_bytes(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  uint32_t x = seed;
  for (auto& c : s) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<char>(x >> 24);
  }
  return s;
}

std::string test_job_user_name() {
  const char* env = std::getenv("SEALRUN_JOB_USER");
  return env != nullptr && *env != '\0' ? env : kDefaultJobUser;
}

}  // namespace sealrun::testing
