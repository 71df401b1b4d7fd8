// SPDX-License-Identifier: Apache-2.0
// Per-stage timestamps for finding where a run's time goes (issue 31). With the environment
// variable SEALRUN_TRACE_STAGES=FILE set, each mark() records its name, CLOCK_MONOTONIC and the
// process's CPU time (all its threads, CLOCK_PROCESS_CPUTIME_ID) in nanoseconds, and flush()
// appends one line per mark to FILE: "<pid> <wall ns> <cpu ns> <name>". The wall clock is the one
// Python's time.monotonic() reads, so a bench script can put a process's start and end (taken
// outside) on the same line as its stages; the CPU time tells a stage's own work from its waiting
// on a machine whose other load stretches every wall figure. Without the variable
// mark() is one relaxed load and a branch: the trace changes nothing a run checks or writes.
#pragma once

#include <string_view>

namespace sealrun::trace {

// Whether SEALRUN_TRACE_STAGES names a file (read once, at the first call).
bool enabled();
// Records `what` (a static string: only the pointer is kept) at the current monotonic time.
void mark(const char* what);
// Appends the marks so far to the trace file and forgets them; errors are ignored (a trace is a
// measuring aid, never part of a run's outcome).
void flush();

// Marks `begin` on construction and `end` on destruction (a stage's two ends).
class Span {
 public:
  Span(const char* begin, const char* end) : end_(end) { mark(begin); }
  ~Span() { mark(end_); }
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;

 private:
  const char* end_;
};

}  // namespace sealrun::trace
