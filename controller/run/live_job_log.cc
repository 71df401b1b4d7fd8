// SPDX-License-Identifier: Apache-2.0
// Live job output: see live_output.h.
#include "controller/run/live_job_log.h"

#include <fcntl.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <system_error>

#include "controller/common/display_text.h"
#include "controller/run/run_progress.h"
#include "core/syscall.h"

namespace sealrun::run {

namespace {

// Bytes read from one stream at a time, so that one busy stream does not keep the other waiting.
constexpr size_t kLiveChunkBytes = 64 * 1024;

std::string size_words(uint64_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  return fmt::format("{} bytes", bytes);
}

// Where to cut `s` at or before `max` without splitting a UTF-8 sequence (a continuation byte is
// 10xxxxxx; at most three of them follow a leading byte).
size_t cut_point(std::string_view s, size_t max) {
  size_t at = std::min(max, s.size());
  for (int back = 0; back < 3 && at > 0 && at < s.size(); ++back) {
    if ((static_cast<unsigned char>(s[at]) & 0xC0) != 0x80) break;
    --at;
  }
  return at;
}

}  // namespace

void LineCutter::emit(std::string_view line, std::string_view prefix, std::string& out,
                      bool cut) const {
  out.append(prefix);
  out += display::escape(line);
  if (cut) out += fmt::format(" [sealrun: line cut at {} bytes]", max_line_);
  out += '\n';
}

void LineCutter::feed(std::string_view bytes, std::string_view prefix, std::string& out) {
  while (!bytes.empty()) {
    size_t nl = bytes.find('\n');
    std::string_view piece = bytes.substr(0, nl);
    if (dropping_) {
      if (nl == std::string_view::npos) return;
      dropping_ = false;
    } else if (pending_.size() + piece.size() > max_line_) {
      // The line outgrows what is shown of one line: show its start, skip the rest of it.
      // (One byte past the limit tells whether the cut would split a character.)
      std::string line = pending_;
      line.append(piece.substr(0, max_line_ + 1 - pending_.size()));
      line.resize(cut_point(line, max_line_));
      emit(line, prefix, out, true);
      pending_.clear();
      dropping_ = nl == std::string_view::npos;
    } else if (nl == std::string_view::npos) {
      pending_.append(piece);
      return;
    } else {
      pending_.append(piece);
      emit(pending_, prefix, out, false);
      pending_.clear();
    }
    bytes.remove_prefix(nl == std::string_view::npos ? bytes.size() : nl + 1);
  }
}

void LineCutter::finish(std::string_view prefix, std::string& out) {
  if (!pending_.empty()) emit(pending_, prefix, out, false);
  pending_.clear();
  dropping_ = false;
}

LiveOutput::LiveOutput(LiveOutputConfig config) : config_(std::move(config)) {}

LiveOutput::~LiveOutput() {
  // A destructor must not throw. What stop() could fail on (a lock, a join, memory for the last
  // lines) costs at most the tail of the live view: the job's logs on disk keep every byte.
  try {
    stop();
  } catch (...) {
  }
}

Status LiveOutput::add_stream(int dirfd, const std::string& name) {
  auto fd = SEALRUN_TRY(open_at(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK));
  // A FIFO or device in place of the log would block or never end: follow regular files only.
  auto st = SEALRUN_TRY(fstat_fd(fd.get(), name));
  if (!S_ISREG(st.st_mode))
    return Error::make("live output: " + name + " is not a regular file; it is not followed");
  auto s =
      std::make_unique<Stream>(Stream{name, std::move(fd), 0, LineCutter(config_.max_line_bytes)});
  streams_.push_back(std::move(s));
  return {};
}

Status LiveOutput::start() {
  started_ms_ = last_shown_ms_ = now_ms();
  try {
    thread_ = std::thread([this] { loop(); });
  } catch (const std::system_error& e) {
    return Error::make(std::string("live output: cannot start its thread: ") + e.what());
  }
  return {};
}

void LiveOutput::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  } else {
    drain();
    std::string rest;
    for (auto& s : streams_) s->lines.finish(config_.prefix, rest);
    if (!exhausted_) show(rest);
  }
}

void LiveOutput::loop() {
  for (;;) {
    drain();
    heartbeat();
    std::unique_lock<std::mutex> lock(mu_);
    if (stopping_) break;
    wake_.wait_for(lock, std::chrono::milliseconds(config_.interval_ms),
                   [this] { return stopping_; });
  }
  // The job has ended: what it wrote last, then each stream's unfinished line.
  drain();
  std::string rest;
  for (auto& s : streams_) s->lines.finish(config_.prefix, rest);
  if (!exhausted_) show(rest);
}

void LiveOutput::drain() {
  bool progress = true;
  while (progress && !exhausted_) {
    progress = false;
    for (auto& s : streams_)
      if (!exhausted_ && read_chunk(*s)) progress = true;
  }
}

bool LiveOutput::read_chunk(Stream& s) {
  auto st = fstat_fd(s.fd.get(), s.name);
  if (!st) return false;
  uint64_t size = static_cast<uint64_t>(st->st_size);
  if (size < s.offset) {
    // The job truncated its own stream; follow it from its new end (said once per stream).
    if (!s.truncation_said)
      show(fmt::format("sealrun: the job truncated its {}; live output follows it from byte {}\n",
                       s.name, size));
    s.truncation_said = true;
    s.offset = size;
    return false;
  }
  if (size == s.offset) return false;
  uint64_t left = config_.max_bytes - shown_;
  if (left == 0) {
    // More than may be shown: what was begun is finished, and one line says where the rest is.
    std::string text;
    for (auto& other : streams_) other->lines.finish(config_.prefix, text);
    text += fmt::format(
        "sealrun: live output stops here, after {} of the job's output; the rest is in its "
        "logs, kept in {}\n",
        size_words(config_.max_bytes), config_.kept_where);
    show(text);
    exhausted_ = true;
    return false;
  }
  // Never more than is new, what may still be shown, or one chunk: a stream made 100 GiB with one
  // ftruncate(2) is read no further than the bound.
  size_t want = static_cast<size_t>(std::min<uint64_t>({size - s.offset, left, kLiveChunkBytes}));
  std::string buf(want, '\0');
  ssize_t got = retry_eintr(
      [&] { return ::pread(s.fd.get(), buf.data(), want, static_cast<off_t>(s.offset)); });
  if (got <= 0) return false;
  buf.resize(static_cast<size_t>(got));
  s.offset += static_cast<uint64_t>(got);
  shown_ += static_cast<uint64_t>(got);
  std::string text;
  s.lines.feed(buf, config_.prefix, text);
  show(text);
  return true;
}

void LiveOutput::show(const std::string& text) {
  if (text.empty() || exhausted_) return;
  last_shown_ms_ = now_ms();
  // A stderr that cannot be written (closed, full disk) ends the live output, never the run.
  if (!write_all(config_.out_fd, text, "stderr")) exhausted_ = out_failed_ = true;
}

int64_t LiveOutput::now_ms() const { return config_.clock ? config_.clock() : monotonic_ms(); }

void LiveOutput::heartbeat() {
  // Also once the bound was reached: the job may run on long after its last line shown.
  if (config_.heartbeat_ms <= 0 || out_failed_) return;
  const int64_t now = now_ms();
  if (now - last_shown_ms_ < config_.heartbeat_ms) return;
  last_shown_ms_ = now;
  if (!write_all(
          config_.out_fd,
          fmt::format("{} running {}\n", config_.heartbeat_what, elapsed_text(now - started_ms_)),
          "stderr"))
    out_failed_ = exhausted_ = true;
}

}  // namespace sealrun::run
