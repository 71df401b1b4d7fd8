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
  struct Mark {
    int64_t wall_ns;  // CLOCK_MONOTONIC
    int64_t cpu_ns;   // CLOCK_PROCESS_CPUTIME_ID: every thread of this process, not its children
    const char* what;
  };
  std::vector<Mark> marks;
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

int64_t now_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace

bool enabled() { return state() != nullptr; }

void mark(const char* what) {
  State* s = state();
  if (s == nullptr) return;
  const int64_t wall = now_ns(CLOCK_MONOTONIC);
  const int64_t cpu = now_ns(CLOCK_PROCESS_CPUTIME_ID);
  std::lock_guard lock(s->mu);
  s->marks.push_back({wall, cpu, what});
}

void flush() {
  State* s = state();
  if (s == nullptr) return;
  std::string out;
  {
    std::lock_guard lock(s->mu);
    const long pid = static_cast<long>(getpid());
    for (const auto& m : s->marks) {
      char line[160];
      std::snprintf(line, sizeof line, "%ld %lld %lld %s\n", pid, static_cast<long long>(m.wall_ns),
                    static_cast<long long>(m.cpu_ns), m.what);
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
