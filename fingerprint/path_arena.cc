// SPDX-License-Identifier: Apache-2.0
// Block storage for paths: see path_arena.h.
#include "fingerprint/path_arena.h"

#include <algorithm>
#include <cstring>

namespace sealrun {

char* PathArena::reserve(size_t n) {
  if (n > left_) {
    const size_t size = std::max(kBlockBytes, n);
    blocks_.push_back(std::make_unique_for_overwrite<char[]>(size));
    next_ = blocks_.back().get();
    left_ = size;
  }
  char* out = next_;
  next_ += n;
  left_ -= n;
  bytes_ += n;
  return out;
}

std::string_view PathArena::concat(std::string_view a, std::string_view b) {
  char* out = reserve(a.size() + b.size() + 1);
  if (!a.empty()) std::memcpy(out, a.data(), a.size());
  if (!b.empty()) std::memcpy(out + a.size(), b.data(), b.size());
  out[a.size() + b.size()] = '\0';
  return std::string_view(out, a.size() + b.size());
}

std::string_view PathArena::join(std::string_view dir, std::string_view name) {
  if (dir.empty()) return concat({}, name);
  char* out = reserve(dir.size() + 1 + name.size() + 1);
  std::memcpy(out, dir.data(), dir.size());
  out[dir.size()] = '/';
  if (!name.empty()) std::memcpy(out + dir.size() + 1, name.data(), name.size());
  out[dir.size() + 1 + name.size()] = '\0';
  return std::string_view(out, dir.size() + 1 + name.size());
}

}  // namespace sealrun
