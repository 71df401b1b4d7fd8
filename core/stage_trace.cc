// SPDX-License-Identifier: Apache-2.0
// The stage trace's buffer and its one write (see stage_trace.h). Marks may come from several
// threads (the census, output hashing): a mutex guards the buffer; a run makes a few dozen marks.
#include "core/stage_trace.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace sealrun::trace {

namespace {

struct State {
  std::string path;
  std::mutex mu;
  std::vector<std::pair<int64_t, const char*>> marks;
};

State* state() {
  static State* s = [] {
    const char* p = std::getenv("SEALRUN_TRACE_STAGES");
    if (p == nullptr || *p == '\0') return static_cast<State*>(nullptr);
    auto* st = new State;  // never freed: marks may come until the process exits
    st->path = p;
    st->marks.reserve(128);
    return st;
  }();
  return s;
}

int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace

bool enabled() { return state() != nullptr; }

void mark(const char* what) {
  State* s = state();
  if (s == nullptr) return;
  int64_t t = now_ns();
  std::lock_guard lock(s->mu);
  s->marks.emplace_back(t, what);
}

void flush() {
  State* s = state();
  if (s == nullptr) return;
  std::string out;
  {
    std::lock_guard lock(s->mu);
    const long pid = static_cast<long>(getpid());
    for (auto& [t, what] : s->marks) {
      char line[160];
      std::snprintf(line, sizeof line, "%ld %lld %s\n", pid, static_cast<long long>(t), what);
      out += line;
    }
    s->marks.clear();
  }
  int fd = open(s->path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  // One write per flush with O_APPEND: lines of concurrent runs do not interleave mid-line.
  const char* p = out.data();
  size_t left = out.size();
  while (left > 0) {
    ssize_t n = write(fd, p, left);
    if (n <= 0) break;
    p += n;
    left -= static_cast<size_t>(n);
  }
  close(fd);
}

}  // namespace sealrun::trace
