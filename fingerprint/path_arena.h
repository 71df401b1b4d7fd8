// SPDX-License-Identifier: Apache-2.0
// Storage for many short byte strings (paths) in large blocks: a tree of a million entries costs
// a few hundred allocations instead of a million, and as few frees. A string once stored never
// moves, and is followed by a NUL (so a stored path can go to a system call as is). Not
// thread-safe: one arena per thread.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>
#include <vector>

namespace sealrun {

class PathArena {
 public:
  // Stores `a` followed by `b` (and a NUL).
  std::string_view concat(std::string_view a, std::string_view b);
  // Stores `dir` + '/' + `name`, or just `name` when `dir` is empty (and a NUL).
  std::string_view join(std::string_view dir, std::string_view name);
  size_t bytes() const { return bytes_; }  // stored so far, NULs included

 private:
  char* reserve(size_t n);

  static constexpr size_t kBlockBytes = 1 << 20;
  std::vector<std::unique_ptr<char[]>> blocks_;
  char* next_ = nullptr;
  size_t left_ = 0;
  size_t bytes_ = 0;
};

}  // namespace sealrun
