// SPDX-License-Identifier: Apache-2.0
// A fresh private directory (mkdtemp under $TMPDIR or /tmp, mode 0700), removed with everything in
// it when the holder goes away — read-only directories a job or a test left behind included. The
// one temporary-directory type of the project (tests wrap it too).
#pragma once

#include <string>

#include "core/result.h"

namespace sealrun {

class ScopedTempDir {
 public:
  static Result<ScopedTempDir> create(const std::string& prefix);
  ScopedTempDir(ScopedTempDir&& other) noexcept;
  ScopedTempDir& operator=(ScopedTempDir&&) = delete;
  ScopedTempDir(const ScopedTempDir&) = delete;
  ScopedTempDir& operator=(const ScopedTempDir&) = delete;
  ~ScopedTempDir();
  const std::string& path() const { return path_; }

 private:
  explicit ScopedTempDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

// Removes `path` and everything below it without following symlinks, first making directories
// writable so that read-only ones do not stop the removal. Best effort; returns false if anything
// was left.
bool remove_tree_forcibly(const std::string& path);

}  // namespace sealrun
