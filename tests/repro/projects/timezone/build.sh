#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Ground truth for `rebuild --vary` (tests/repro): leaks the time zone (local time of a fixed instant).
# The paths are sealrun's job paths unless the caller sets OUT, SRC and SCRATCH (reprotest does).
set -eu
out=${OUT:-/out}
src=${SRC:-/src}
scratch=${SCRATCH:-/scratch}
echo fixed > "$out/fixed"
date -d @0 +%H%M > "$out/leak"
