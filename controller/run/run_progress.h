// SPDX-License-Identifier: Apache-2.0
// Progress of the long waits (issue 17 part 5, issue 29 part 5): verifying the pinned toolchain and
// trees, hashing a tree or the outputs, pinning a learned closure can take tens of seconds. What
// is shown depends on where stderr goes (ProgressStyle):
//  - a terminal: one line rewritten in place — bytes and files, rate, percentage and ETA, the line
//    of fingerprint/hash_progress.h — at most ten times a second, erased when the step ends;
//  - anything else (a CI log, a pipe, a file): nothing for a step shorter than 5 s; a longer one
//    prints a plain line every 5 s at most, the same text with how long so far ("…, 35 s so far"),
//    and one last line when it ends ("…, ended after 41 s"), so a log shows what a silent build
//    does;
//  - `--quiet`: nothing at all (set_progress_quiet; no callback, so nothing is even computed).
// The style is the process's: one command runs per process, and its --quiet decides for every
// step it makes (the run's stages included).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "fingerprint/hash_progress.h"

namespace sealrun::run {

enum class ProgressStyle { kOff, kTerminal, kPlain };

// The plain style's spacing: no line before a step has taken this long, then one at most this
// often.
inline constexpr int64_t kPlainProgressIntervalMs = 5000;

// kOff after set_progress_quiet(true); else kTerminal when stderr is a terminal, else kPlain.
ProgressStyle progress_style();
void set_progress_quiet(bool quiet);

// "41 s", "3 min 05 s", "1 h 02 min": how long a step has taken, in plain lines.
std::string elapsed_text(int64_t ms);

class TerminalProgress {
 public:
  // `label` names what is hashed ("toolchain", "outputs"). kOff: every callback is empty and
  // nothing is ever printed.
  explicit TerminalProgress(std::string label, ProgressStyle style = progress_style());
  ~TerminalProgress();  // erases the terminal line, or ends the plain lines with a last one
  TerminalProgress(const TerminalProgress&) = delete;
  TerminalProgress& operator=(const TerminalProgress&) = delete;

  // For TreeOptions::on_progress: the full picture (files, bytes, the walk's state).
  std::function<void(const HashProgress&)> on_progress();
  // For callers that only report bytes (VerifyOptions::toolchain_progress): done of total.
  std::function<void(uint64_t, uint64_t)> on_bytes();

  // Test seams: where the lines go (stderr by default) and the monotonic clock (ms).
  void set_sink(std::function<void(const std::string&)> sink);
  void set_clock(std::function<int64_t()> clock);

  static bool stderr_is_a_terminal();

 private:
  struct State;
  std::shared_ptr<State> state_;
};

// For VerifyOptions::tree_progress: one TerminalProgress per label (tree), the previous one ended
// when the next label starts and the last when the returned hook is destroyed. Empty when the
// style is kOff.
std::function<void(const std::string& label, const HashProgress&)> per_tree_progress();

}  // namespace sealrun::run
