// SPDX-License-Identifier: Apache-2.0
// How a file is named in an error message, kept as the pieces it is made of and joined only when
// an error is reported. Hashing a tree passes every file's name down through opening, reading and
// checking; joining "ROOT/REL" up front cost two allocations per file, for a string that a tree
// hashed without errors never shows.
#pragma once

#include <string>
#include <string_view>

namespace sealrun {

class DisplayName {
 public:
  // A name shown as it is. Implicit, so that any string naming a file can be passed; the
  // characters are not copied and must outlive this object (it is meant as a parameter).
  DisplayName(const std::string& name) : first_(name) {}  // NOLINT(google-explicit-constructor)
  DisplayName(const char* name) : first_(name) {}         // NOLINT(google-explicit-constructor)
  // `rel` beneath `root` as the tree walk shows it: "ROOT/REL", or just REL when ROOT is ".".
  DisplayName(std::string_view root, std::string_view rel)
      : first_(root), rel_(rel), beneath_(true) {}

  std::string str() const {
    if (!beneath_) return std::string(first_);
    if (first_ == ".") return std::string(rel_);
    std::string joined;
    joined.reserve(first_.size() + 1 + rel_.size());
    joined.append(first_).append(1, '/').append(rel_);
    return joined;
  }

 private:
  std::string_view first_;
  std::string_view rel_;
  bool beneath_ = false;
};

}  // namespace sealrun
