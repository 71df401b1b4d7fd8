#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Ground truth for `rebuild --vary` (tests/repro): leaks the physical path of its build directory in the scratch space (what a compiler embeds through getcwd).
# The paths are sealrun's job paths unless the caller sets OUT, SRC and SCRATCH (reprotest does).
set -eu
out=${OUT:-/out}
src=${SRC:-/src}
scratch=${SCRATCH:-/scratch}
echo fixed > "$out/fixed"
mkdir -p "$scratch/b"
cd "$scratch/b"
pwd -P > "$out/leak"
