// SPDX-License-Identifier: Apache-2.0
// sweep_images(): see image_sweep.h.
#include "controller/image_sweep.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <string>

#include "controller/run_image_root.h"

namespace sealrun::run {

namespace {

// The names under images/ that look like what image_rootfs() makes: 64 lower-case hex digits.
bool image_dir_name(const std::string& name) {
  return name.size() == 64 && std::all_of(name.begin(), name.end(), [](char c) {
           return std::isxdigit(c) && !std::isupper(c);
         });
}

}  // namespace

std::vector<SweepStep> sweep_images(const StateDir& state) {
  std::vector<SweepStep> steps;
  if (!state.exists("images")) return steps;
  auto dir = state.open("images", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (!dir) return {{"images/", "unreadable: " + dir.error().message(), true}};
  std::vector<std::string> names;
  DIR* d = ::fdopendir(::dup(dir->get()));
  if (d == nullptr) return {{"images/", "unreadable", true}};
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    std::string rel = "images/" + name;
    if (!image_dir_name(name)) {
      steps.push_back({rel, "not an unpacked image root: left alone", false});
      continue;
    }
    auto lock = lock_image_dir(state, name, true);
    if (!lock) {
      steps.push_back({rel, "kept: " + lock.error().message(), false});
      continue;
    }
    Status removed = state.remove_tree(rel);
    steps.push_back({rel,
                     removed ? "removed (unused; unpacked again from its archive when needed)"
                             : "not removed: " + removed.error().message(),
                     !removed.ok()});
  }
  return steps;
}

}  // namespace sealrun::run
