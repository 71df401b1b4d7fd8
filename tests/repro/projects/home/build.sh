#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Ground truth for `rebuild --vary` (tests/repro): leaks HOME and whether it is a directory.
# The paths are sealrun's job paths unless the caller sets OUT, SRC and SCRATCH (reprotest does).
set -eu
out=${OUT:-/out}
src=${SRC:-/src}
scratch=${SCRATCH:-/scratch}
echo fixed > "$out/fixed"
{ echo "${HOME-unset}"; if [ -d "${HOME:-/nonexistent}" ]; then echo directory; else echo none; fi; } > "$out/leak"
