// SPDX-License-Identifier: Apache-2.0
/* The one way the contrib/slurm C code reports why something failed: a sentence into the caller's
 * buffer, and -1 to return. Shared by the step gate (gate.c) and the pids delegation (delegate.c);
 * the plugin logs the sentence once, where it handles the failure. */
#ifndef SEALRUN_CONTRIB_SLURM_REASON_H
#define SEALRUN_CONTRIB_SLURM_REASON_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

__attribute__((format(printf, 3, 4))) static inline int sealrun_fail(char* why, size_t why_len,
                                                                     const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, why_len, fmt, ap);
  va_end(ap);
  return -1;
}

#endif
