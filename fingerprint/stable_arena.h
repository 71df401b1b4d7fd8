// SPDX-License-Identifier: Apache-2.0
// Append-only storage whose elements never move (pointers to them stay valid while more are
// added), for the records a tree walk makes: one allocation per block of elements, where
// std::deque makes one per 512 bytes (three TreeEntry records). Walking /usr through the digest
// cache made ~57,000 such allocations, and freed them one by one at the end.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <vector>

namespace sealrun {

template <typename T, size_t kBlock = 1024>
class StableArena {
 public:
  // A new default-constructed element at the end.
  T& emplace_back() {
    if (blocks_.empty() || used_ == kBlock) {
      blocks_.push_back(std::make_unique<T[]>(kBlock));
      used_ = 0;
    }
    ++size_;
    return blocks_.back()[used_++];
  }
  size_t size() const { return size_; }
  // Calls f(element) for each of the first `count` elements (all of them if there are fewer), in
  // the order they were added.
  template <typename F>
  void for_each_first(size_t count, F&& f) {
    for (size_t b = 0; b < blocks_.size() && count > 0; ++b) {
      const size_t n = std::min(count, b + 1 == blocks_.size() ? used_ : kBlock);
      for (size_t i = 0; i < n; ++i) f(blocks_[b][i]);
      count -= n;
    }
  }
  T& front() { return blocks_.front()[0]; }

 private:
  std::vector<std::unique_ptr<T[]>> blocks_;
  size_t used_ = 0;  // in the last block
  size_t size_ = 0;
};

}  // namespace sealrun
