// SPDX-License-Identifier: Apache-2.0
// Live job output (docs/run-output.md): while a job runs, the lines it writes to its stdout
// and stderr are shown on the controller's stderr, each prefixed `job| `, as they arrive.
//
// The job's streams stay what they were: regular files beneath the run's logs directory, which
// the job can never block on. A thread follows them through descriptors of their own (opened
// read-only beside the job's, never a dup: a dup would share, and move, the job's file offset),
// reads only what is new by offset every interval, and writes whole lines. What reaches the
// terminal is bounded and safe: at most `max_bytes` of the job's output in all (then one line
// says where the rest is kept), lines cut at `max_line_bytes`, every byte a terminal would act on
// escaped (display_text.h), so a hostile job can neither flood the controller nor drive the
// user's terminal. A stream the job truncates or makes sparse costs no more than the bound: the
// tail never reads by the file's size, only up to what it may still show.
#pragma once

#include <unistd.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/result.h"
#include "core/unique_fd.h"

namespace sealrun::run {

// One stream's bytes to display lines: complete lines escaped and prefixed; a line longer than
// `max_line_bytes` shown up to there with a marker, the rest of it dropped. Pure.
class LineCutter {
 public:
  explicit LineCutter(size_t max_line_bytes) : max_line_(max_line_bytes) {}
  // Appends to `out` the lines `bytes` completes, each ending in '\n'.
  void feed(std::string_view bytes, std::string_view prefix, std::string& out);
  // Appends the last line if it had no newline (given one).
  void finish(std::string_view prefix, std::string& out);

 private:
  void emit(std::string_view line, std::string_view prefix, std::string& out, bool cut) const;
  size_t max_line_;
  std::string pending_;    // the line so far, never longer than max_line_
  bool dropping_ = false;  // the current line was cut: its rest is skipped up to its newline
};

struct LiveOutputConfig {
  int out_fd = STDERR_FILENO;  // not owned
  std::string prefix = "job| ";
  uint64_t max_bytes = 16ULL << 20;  // of the job's bytes, all streams together
  size_t max_line_bytes = 4096;
  int64_t interval_ms = 100;
  std::string kept_where;  // named by the notice once max_bytes is reached
  // Without a terminal (issue 29): when nothing was shown for this long, one line says the job
  // still runs and for how long ("job running 35 s"), so a CI log never goes silent. 0: never.
  int64_t heartbeat_ms = 0;
  std::string heartbeat_what = "job";
  std::function<int64_t()> clock;  // a test seam; empty: the monotonic clock
};

class LiveOutput {
 public:
  explicit LiveOutput(LiveOutputConfig config);
  ~LiveOutput();  // stop()
  LiveOutput(const LiveOutput&) = delete;
  LiveOutput& operator=(const LiveOutput&) = delete;

  // Opens `name` in `dirfd` read-only (never through a link) to follow it. Before start().
  Status add_stream(int dirfd, const std::string& name);
  // Starts following. Only after the job is spawned: no thread may exist before a fork that is
  // still to come (docs/style.md rule 4).
  Status start();
  // Reads what is left (within the bound), shows each stream's last line without a newline, and
  // joins. Idempotent; a LiveOutput never started is drained once on the calling thread.
  void stop();

 private:
  struct Stream {
    std::string name;
    UniqueFd fd;
    uint64_t offset = 0;
    LineCutter lines;
    bool truncation_said = false;
  };
  void loop();
  // One pass over every stream until none has new bytes (or the bound is reached).
  void drain();
  // Reads at most one chunk of `s`; false when it had nothing new.
  bool read_chunk(Stream& s);
  void show(const std::string& text);
  // The heartbeat line when one is due (LiveOutputConfig::heartbeat_ms).
  void heartbeat();
  int64_t now_ms() const;

  LiveOutputConfig config_;
  std::vector<std::unique_ptr<Stream>> streams_;
  uint64_t shown_ = 0;         // the job's bytes consumed so far, all streams
  bool exhausted_ = false;     // the bound was reached (or stderr failed): nothing more is shown
  bool out_failed_ = false;    // stderr could not be written: not even a heartbeat
  int64_t started_ms_ = 0;     // start()
  int64_t last_shown_ms_ = 0;  // the last line written, the job's or a heartbeat
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool stopped_ = false;
};

}  // namespace sealrun::run
