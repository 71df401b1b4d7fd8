// SPDX-License-Identifier: Apache-2.0
// TerminalProgress: see run_progress.h.
#include "controller/run/run_progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <mutex>

#include "core/syscall.h"

namespace sealrun::run {

namespace {
constexpr int64_t kTerminalIntervalMs = 100;
std::atomic<bool> g_quiet{false};
}  // namespace

ProgressStyle progress_style() {
  if (g_quiet.load()) return ProgressStyle::kOff;
  return TerminalProgress::stderr_is_a_terminal() ? ProgressStyle::kTerminal
                                                  : ProgressStyle::kPlain;
}

void set_progress_quiet(bool quiet) { g_quiet.store(quiet); }

std::string elapsed_text(int64_t ms) {
  const int64_t s = std::max<int64_t>(ms, 0) / 1000;
  if (s < 60) return fmt::format("{} s", s);
  if (s < 3600) return fmt::format("{} min {:02} s", s / 60, s % 60);
  return fmt::format("{} h {:02} min", s / 3600, s % 3600 / 60);
}

struct TerminalProgress::State {
  State(std::string label, ProgressStyle s) : line(std::move(label)), style(s) {}
  std::mutex mu;  // the hashing threads may report from more than one thread
  ProgressLine line;
  ProgressStyle style;
  std::function<int64_t()> clock = [] { return monotonic_ms(); };
  int64_t started_ms = -1;  // the first report: the step's start as far as progress knows
  int64_t last_ms = 0;
  bool shown = false;
  HashProgress last;  // the latest report, for the plain style's last line
  bool last_bytes_only = false;
  std::function<void(const std::string&)> sink = [](const std::string& text) {
    std::fputs(text.c_str(), stderr);
    std::fflush(stderr);
  };

  std::string render(const HashProgress& p, bool bytes_only, int64_t now) {
    std::string text = line.render(p, now);
    if (bytes_only) {  // the caller knows no file counts: leave out the "0 of 0 files"
      auto at = text.find(", 0 of 0 files");
      if (at != std::string::npos) text.erase(at, 14);
    }
    return text;
  }

  void show(const HashProgress& p, bool final_report, bool bytes_only) {
    std::lock_guard<std::mutex> lock(mu);
    const int64_t now = clock();
    if (started_ms < 0) started_ms = now;
    last = p;
    last_bytes_only = bytes_only;
    if (style == ProgressStyle::kTerminal) {
      if (shown && !final_report && now - last_ms < kTerminalIntervalMs) return;
      last_ms = now;
      sink("\r" + render(p, bytes_only, now) + "\033[K");
      shown = true;
      return;
    }
    // Plain: the rate needs its samples even when nothing is printed.
    std::string text = render(p, bytes_only, now);
    if (now - started_ms < kPlainProgressIntervalMs) return;
    if (shown && now - last_ms < kPlainProgressIntervalMs) return;
    last_ms = now;
    sink(fmt::format("{}, {} so far\n", text, elapsed_text(now - started_ms)));
    shown = true;
  }

  void end() {
    std::lock_guard<std::mutex> lock(mu);
    if (!shown) return;
    if (style == ProgressStyle::kTerminal) {
      sink("\r\033[K");
      return;
    }
    const int64_t now = clock();
    sink(fmt::format("{}, ended after {}\n", render(last, last_bytes_only, now),
                     elapsed_text(now - started_ms)));
  }
};

TerminalProgress::TerminalProgress(std::string label, ProgressStyle style) {
  if (style != ProgressStyle::kOff) state_ = std::make_shared<State>(std::move(label), style);
}

TerminalProgress::~TerminalProgress() {
  if (state_) state_->end();
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

void TerminalProgress::set_clock(std::function<int64_t()> clock) {
  if (state_) state_->clock = std::move(clock);
}

bool TerminalProgress::stderr_is_a_terminal() { return ::isatty(STDERR_FILENO) == 1; }

std::function<void(const std::string&, const HashProgress&)> per_tree_progress() {
  if (progress_style() == ProgressStyle::kOff) return {};
  struct Current {
    std::string label;
    std::unique_ptr<TerminalProgress> line;
    std::function<void(const HashProgress&)> hook;
  };
  auto current = std::make_shared<Current>();
  return [current](const std::string& label, const HashProgress& p) {
    if (label != current->label || !current->line) {
      current->line.reset();  // ends the previous tree's line
      current->line = std::make_unique<TerminalProgress>(label);
      current->label = label;
      current->hook = current->line->on_progress();
    }
    current->hook(p);
  };
}

}  // namespace sealrun::run
