// SPDX-License-Identifier: Apache-2.0
// ScopedTempDir: see temp_dir.h.
#include "core/temp_dir.h"

#include <fmt/format.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>

namespace sealrun {

Result<ScopedTempDir> ScopedTempDir::create(const std::string& prefix) {
  const char* tmp = ::getenv("TMPDIR");
  std::string base = tmp != nullptr && tmp[0] == '/' ? tmp : "/tmp";
  std::string templ = base + "/" + prefix + "-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr)
    return Error::from_errno(fmt::format("mkdtemp {}", templ));
  return ScopedTempDir(templ);
}

ScopedTempDir::ScopedTempDir(ScopedTempDir&& other) noexcept : path_(std::move(other.path_)) {
  other.path_.clear();
}

ScopedTempDir::~ScopedTempDir() {
  if (!path_.empty()) remove_tree_forcibly(path_);  // nothing useful to do with a failure here
}

bool remove_tree_forcibly(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(path, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_directory(ec) && !it->is_symlink(ec))
      fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
  }
  ec.clear();
  fs::remove_all(path, ec);
  return !ec;
}

}  // namespace sealrun
