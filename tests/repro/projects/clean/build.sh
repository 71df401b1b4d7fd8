#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Ground truth for `rebuild --vary` (tests/repro): leaks nothing: identical under every variation.
# The paths are sealrun's job paths unless the caller sets OUT, SRC and SCRATCH (reprotest does).
set -eu
out=${OUT:-/out}
src=${SRC:-/src}
scratch=${SCRATCH:-/scratch}
echo fixed > "$out/fixed"
mkdir -p "$out/d"
printf "a\nb\n" > "$out/d/list"
sha256sum < "$src/build.sh" > "$out/d/sum"
