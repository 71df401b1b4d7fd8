// SPDX-License-Identifier: Apache-2.0
// Progress on a terminal for the long waits of `sealrun run` (issue 17, part 5): verifying the
// pinned toolchain and hashing the outputs can take tens of seconds on a big tree. On a terminal
// (stderr), one line is rewritten in place — bytes and files, rate, percentage and ETA, the same
// line `sealrun fingerprint tree` shows (fingerprint/hash_progress.h) — at most ten times a second,
// and erased when the step ends; when stderr is not a terminal nothing is printed at all.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "fingerprint/hash_progress.h"

namespace sealrun::run {

class TerminalProgress {
 public:
  // `label` names what is hashed ("toolchain", "outputs"). `enabled` false: every callback is
  // empty and nothing is ever printed (the default asks whether stderr is a terminal).
  explicit TerminalProgress(std::string label, bool enabled = stderr_is_a_terminal());
  ~TerminalProgress();  // erases the line if one was shown
  TerminalProgress(const TerminalProgress&) = delete;
  TerminalProgress& operator=(const TerminalProgress&) = delete;

  // For TreeOptions::on_progress: the full picture (files, bytes, the walk's state).
  std::function<void(const HashProgress&)> on_progress();
  // For callers that only report bytes (VerifyOptions::toolchain_progress): done of total.
  std::function<void(uint64_t, uint64_t)> on_bytes();

  // Where the line goes (a test seam): stderr by default.
  void set_sink(std::function<void(const std::string&)> sink);

  static bool stderr_is_a_terminal();

 private:
  struct State;
  std::shared_ptr<State> state_;
};

// For VerifyOptions::tree_progress: one TerminalProgress line per label (tree), the previous one
// erased when the next label starts and the last when the returned hook is destroyed. Empty when
// stderr is not a terminal.
std::function<void(const std::string& label, const HashProgress&)> per_tree_progress();

}  // namespace sealrun::run
