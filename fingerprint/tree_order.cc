// SPDX-License-Identifier: Apache-2.0
// Assembling the inventory's order from sorted directories: see tree_order.h.
#include "fingerprint/tree_order.h"

#include <algorithm>
#include <cstring>
#include <string_view>

#include "fingerprint/tree_walk.h"

namespace sealrun {
namespace {

std::string_view name_of(const TreeEntry* e, size_t prefix_len) {
  return std::string_view(e->path).substr(prefix_len);
}

// a + suffix_a < b + suffix_b, as raw bytes, where each suffix is "/" or nothing.
bool less_with_slash(std::string_view a, bool slash_a, std::string_view b, bool slash_b) {
  const size_t n = std::min(a.size(), b.size());
  const int c = n == 0 ? 0 : std::memcmp(a.data(), b.data(), n);
  if (c != 0) return c < 0;
  // One is a prefix of the other: compare the next byte, where '/' stands in for the suffix.
  auto at = [](std::string_view s, bool slash, size_t i) -> int {
    if (i < s.size()) return static_cast<unsigned char>(s[i]);
    return i == s.size() && slash ? '/' : -1;  // -1: the string has ended
  };
  for (size_t i = n;; ++i) {
    const int x = at(a, slash_a, i), y = at(b, slash_b, i);
    if (x != y) return x < y;
    if (x == -1) return false;  // equal
  }
}

}  // namespace

void sort_children(DirNode& node) {
  const size_t p = node.prefix_len;
  std::sort(node.records.begin(), node.records.end(),
            [p](const TreeEntry* a, const TreeEntry* b) { return name_of(a, p) < name_of(b, p); });
  std::sort(node.subdirs.begin(), node.subdirs.end(), [p](const auto& a, const auto& b) {
    return less_with_slash(name_of(a.first, p), true, name_of(b.first, p), true);
  });
}

std::vector<const TreeEntry*> assemble_order(const TreeEntry* root_entry, DirNode& root,
                                             size_t entries_hint) {
  std::vector<const TreeEntry*> order;
  order.reserve(entries_hint);
  order.push_back(root_entry);
  struct Frame {
    DirNode* node;
    size_t record = 0;  // next record to emit
    size_t subdir = 0;  // next directory whose contents to emit
  };
  sort_children(root);
  std::vector<Frame> stack{{&root}};
  while (!stack.empty()) {
    Frame& f = stack.back();
    const DirNode& n = *f.node;
    const bool records_left = f.record < n.records.size();
    const bool subdirs_left = f.subdir < n.subdirs.size();
    if (!records_left && !subdirs_left) {
      stack.pop_back();
      continue;
    }
    // A child's record (name) comes before a directory's contents (name + "/") unless the
    // latter is smaller.
    if (records_left && (!subdirs_left ||
                         less_with_slash(name_of(n.records[f.record], n.prefix_len), false,
                                         name_of(n.subdirs[f.subdir].first, n.prefix_len), true))) {
      order.push_back(n.records[f.record++]);
    } else {
      DirNode* child = n.subdirs[f.subdir++].second;
      sort_children(*child);
      stack.push_back(Frame{child});  // invalidates f; the loop re-reads the back
    }
  }
  return order;
}

}  // namespace sealrun
