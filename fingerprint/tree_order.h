// SPDX-License-Identifier: Apache-2.0
// The inventory's order (raw path bytes) assembled from one sorted list per directory, so that the
// walk never sorts all paths at once. Within a directory, a child's own record sorts by its name,
// but a child directory's contents sort by its name followed by '/': "a", "a-", "a.b", then
// "a/x", since '-' (0x2d) and '.' (0x2e) come before '/' (0x2f). Merging the two sorted lists
// directory by directory gives exactly the order of sorting every full path. Pure code.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace sealrun {

struct TreeEntry;

struct DirNode {
  size_t prefix_len = 0;  // bytes of the directory's path plus its '/' (0 for the root)
  std::vector<const TreeEntry*> records;                       // every child
  std::vector<std::pair<const TreeEntry*, DirNode*>> subdirs;  // child directories
};

// Sorts `records` by name and `subdirs` by name + "/" (names are the entries' paths past
// prefix_len).
void sort_children(DirNode& node);

// `root_entry` ("."), then every entry below `root` in raw path byte order, sorting each
// directory's children (sort_children) as it gets there. Iterative, so a tree thousands of
// directories deep needs no deep stack.
std::vector<const TreeEntry*> assemble_order(const TreeEntry* root_entry, DirNode& root,
                                             size_t entries_hint);

}  // namespace sealrun
