// SPDX-License-Identifier: Apache-2.0
// sweep_images(): see image_sweep.h.
#include "controller/run/image_sweep.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>

#include <algorithm>
#include <cctype>
#include <string>

#include "controller/run/pin_images.h"
#include "controller/run/run_image_root.h"

namespace sealrun::run {

namespace {

// The names under images/ that look like what image_rootfs() makes: 64 lower-case hex digits.
bool image_dir_name(const std::string& name) {
  return name.size() == 64 && std::all_of(name.begin(), name.end(), [](char c) {
           return std::isxdigit(c) && !std::isupper(c);
         });
}

// The names under pins/ that pin_images.h makes: tree-<hex> and closure-<hex>.
bool pin_dir_name(const std::string& name) {
  for (const char* kind : {"tree-", "closure-"}) {
    std::string k = kind;
    if (name.rfind(k, 0) == 0) return image_dir_name(name.substr(k.size()));
  }
  return false;
}

// The entries of `sub` (images/ or pins/), sorted, or the step saying why they cannot be read.
Result<std::vector<std::string>> entries_of(const StateDir& state, const std::string& sub) {
  auto dir = state.open(sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (!dir) return Error::make("unreadable: " + dir.error().message());
  std::vector<std::string> names;
  DIR* d = ::fdopendir(::dup(dir->get()));
  if (d == nullptr) return Error::make("unreadable");
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

// One kind of cached directory: where it lives, which names are its own, how a run holds one,
// and what removing an unused one means.
struct Cached {
  std::string sub;  // "pins" or "images"
  bool (*own_name)(const std::string&);
  std::string stranger;  // the outcome for a name that is not its own
  Result<UniqueFd> (*lock_unused)(const StateDir&, const std::string& name);
  std::string removed;  // the outcome of a removal
};

Result<UniqueFd> lock_unused_image(const StateDir& state, const std::string& name) {
  return lock_image_dir(state, name, true);
}

Result<UniqueFd> lock_unused_pin_by_name(const StateDir& state, const std::string& name) {
  return lock_pin_dir(state, "pins/" + name, true);
}

// Each entry is removed while it is locked exclusively: a run that opened it before gets its
// shared lock only afterwards, finds it unlinked and makes it again (pin_images.cc,
// run_image_root.cc).
void sweep_cached(const StateDir& state, const Cached& kind, std::vector<SweepStep>& steps) {
  if (!state.exists(kind.sub)) return;
  auto names = entries_of(state, kind.sub);
  if (!names) {
    steps.push_back({kind.sub + "/", names.error().message(), true});
    return;
  }
  for (const auto& name : *names) {
    std::string rel = kind.sub + "/" + name;
    if (!kind.own_name(name)) {
      steps.push_back({rel, kind.stranger, false});
      continue;
    }
    auto lock = kind.lock_unused(state, name);
    if (!lock) {
      steps.push_back({rel, "kept: " + lock.error().message(), false});
      continue;
    }
    Status removed = state.remove_tree(rel);
    steps.push_back(
        {rel, removed ? kind.removed : "not removed: " + removed.error().message(), !removed.ok()});
  }
}

}  // namespace

std::vector<SweepStep> sweep_images(const StateDir& state) {
  std::vector<SweepStep> steps;
  sweep_cached(state,
               {"pins", pin_dir_name, "not a pin image: left alone", lock_unused_pin_by_name,
                "removed (unused; built again from its verified tree when needed)"},
               steps);
  sweep_cached(state,
               {"images", image_dir_name, "not an unpacked image root: left alone",
                lock_unused_image, "removed (unused; unpacked again from its archive when needed)"},
               steps);
  return steps;
}

}  // namespace sealrun::run
