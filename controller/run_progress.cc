// SPDX-License-Identifier: Apache-2.0
// TerminalProgress: see run_progress.h.
#include "controller/run_progress.h"

#include <unistd.h>

#include <cstdio>
#include <mutex>

#include "core/syscall.h"

namespace sealrun::run {

namespace {
constexpr int64_t kMinIntervalMs = 100;
}  // namespace

struct TerminalProgress::State {
  explicit State(std::string label) : line(std::move(label)) {}
  std::mutex mu;  // the hashing threads may report from more than one thread
  ProgressLine line;
  int64_t last_ms = -kMinIntervalMs;
  bool shown = false;
  std::function<void(const std::string&)> sink = [](const std::string& text) {
    std::fputs(text.c_str(), stderr);
    std::fflush(stderr);
  };

  void show(const HashProgress& p, bool last, bool bytes_only) {
    std::lock_guard<std::mutex> lock(mu);
    int64_t now = monotonic_ms();
    if (!last && now - last_ms < kMinIntervalMs) return;
    last_ms = now;
    std::string text = line.render(p, now);
    if (bytes_only) {  // the caller knows no file counts: leave out the "0 of 0 files"
      auto at = text.find(", 0 of 0 files");
      if (at != std::string::npos) text.erase(at, 14);
    }
    sink("\r" + text + "\033[K");
    shown = true;
  }
};

TerminalProgress::TerminalProgress(std::string label, bool enabled) {
  if (enabled) state_ = std::make_shared<State>(std::move(label));
}

TerminalProgress::~TerminalProgress() {
  if (state_ && state_->shown) state_->sink("\r\033[K");
}

std::function<void(const HashProgress&)> TerminalProgress::on_progress() {
  if (!state_) return {};
  return [s = state_](const HashProgress& p) { s->show(p, false, false); };
}

std::function<void(uint64_t, uint64_t)> TerminalProgress::on_bytes() {
  if (!state_) return {};
  return [s = state_](uint64_t done, uint64_t total) {
    HashProgress p;
    p.bytes_done = done;
    p.bytes_found = total;
    p.walk_complete = true;
    s->show(p, done >= total, true);
  };
}

void TerminalProgress::set_sink(std::function<void(const std::string&)> sink) {
  if (state_) state_->sink = std::move(sink);
}

bool TerminalProgress::stderr_is_a_terminal() { return ::isatty(STDERR_FILENO) == 1; }

std::function<void(const std::string&, const HashProgress&)> per_tree_progress() {
  if (!TerminalProgress::stderr_is_a_terminal()) return {};
  struct Current {
    std::string label;
    std::unique_ptr<TerminalProgress> line;
    std::function<void(const HashProgress&)> hook;
  };
  auto current = std::make_shared<Current>();
  return [current](const std::string& label, const HashProgress& p) {
    if (label != current->label || !current->line) {
      current->line.reset();  // erases the previous tree's line
      current->line = std::make_unique<TerminalProgress>(label);
      current->label = label;
      current->hook = current->line->on_progress();
    }
    current->hook(p);
  };
}

}  // namespace sealrun::run
