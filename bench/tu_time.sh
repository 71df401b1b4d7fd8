#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A compiler launcher that logs each compile's CPU time (user + sys) and its source file, one
# "SECONDS FILE" line each, to $SEALRUN_TU_LOG: bench/build_cpu.sh's per-file figures, e.g.
#   cmake -DCMAKE_CXX_COMPILER_LAUNCHER=$PWD/bench/tu_time.sh ...  (with SEALRUN_TU_LOG exported)
# Without SEALRUN_TU_LOG it runs the compiler and logs nothing.
set -uo pipefail
if [ -z "${SEALRUN_TU_LOG:-}" ]; then
  exec "$@"
fi
src=
prev=
for a in "$@"; do
  [ "$prev" = -c ] && src=$a
  prev=$a
done
one=$(mktemp)
/usr/bin/time -f '%U %S' -o "$one" "$@"
rc=$?
awk -v f="${src:-link}" '{printf "%.2f %s\n", $1 + $2, f}' "$one" >>"$SEALRUN_TU_LOG"
rm -f "$one"
exit $rc
