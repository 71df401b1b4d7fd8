#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The admitted command of the demo: build hello.c from the read-only /src into /out, using only
# the toolchain and scratch space the admission grants. Reproducible: no timestamps, no host paths.
set -eu
cc=${CC:-cc}
mkdir -p /scratch/obj
"$cc" -O2 -ffile-prefix-map=/src=. -c hello.c -o /scratch/obj/hello.o
"$cc" -o /out/hello /scratch/obj/hello.o
/out/hello > /out/greeting.txt
