#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Ground truth for `rebuild --vary` (tests/repro): leaks whether address-space randomisation is on (two runs of one program see their stack at the same place or not).
# The paths are sealrun's job paths unless the caller sets OUT, SRC and SCRATCH (reprotest does).
set -eu
out=${OUT:-/out}
src=${SRC:-/src}
scratch=${SCRATCH:-/scratch}
echo fixed > "$out/fixed"
a=$(grep "\[stack\]" /proc/self/maps)
b=$(grep "\[stack\]" /proc/self/maps)
if [ "$a" = "$b" ]; then echo fixed; else echo randomised; fi > "$out/leak"
