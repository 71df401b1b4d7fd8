#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A rootless podman run's cost with its pinned trees served from pin images (containment/
# podman_pins.h: each image mounted and attached below the owned root before podman starts, and
# unmounted at cleanup) against the same run with them bound live from the host (a sealrun from
# before, e.g. a build of main): paired runs (bench/paired.py, A = this build, B = the other), each
# binary with a state directory of its own (their images and probe caches warm after the warm-up).
# The job is `true` from the busybox image, with a toolchain (a static busybox) and TREES more
# pinned trees of FILES files each. Run as root from the top of a build:
#   SEALRUN=build/sealrun SEALRUN_BASE=/path/to/main/sealrun bench/podman_pins_bench.sh \
#     [RUNS=10] [TREES=3] [FILES=200]
set -euo pipefail
SEALRUN=$(realpath "${SEALRUN:-build/sealrun}")
BASE=$(realpath "${SEALRUN_BASE:?a sealrun that binds pins live under podman}")
RUNS=${1:-10}
TREES=${2:-3}
FILES=${3:-200}
HERE=$(cd "$(dirname "$0")" && pwd)
FIXTURES=$(cd "$HERE/.." && pwd)/build/fixtures
[ -f "$FIXTURES/busybox.oci.tar" ] || "$HERE/../tests/fixtures/busybox_image.sh" "$FIXTURES" >/dev/null
W=$(mktemp -d /var/tmp/podman-pins-bench.XXXXXX)
trap 'rm -rf "$W"' EXIT
chmod 0711 "$W"  # rootless podman (the job user) takes its paths through here
mkdir "$W/src" "$W/toolchain"
echo input >"$W/src/input.txt"
cp "$(command -v busybox)" "$W/toolchain/busybox"
trees=()
for t in $(seq 1 "$TREES"); do
  mkdir -p "$W/tree$t"
  for i in $(seq 1 "$FILES"); do head -c 4096 /dev/urandom >"$W/tree$t/f$i"; done
  trees+=(--tree "$W/tree$t=/opt/tree$t")
done
"$SEALRUN" admit freeze --out "$W/admission.json" --source "$W/src" --toolchain "$W/toolchain" \
  --toolchain-mount /opt/toolchain --image "$FIXTURES/busybox.oci.tar" "${trees[@]}" \
  -- /bin/true >"$W/frozen"
SHA=$(head -c 64 "$W/frozen")
mkdir "$W/state-a" "$W/state-b"
run() {  # run SEALRUN STATE: the default id (run-<UTC time>-<pid>) is new each time
  echo "$1 run $W/admission.json --sha256 $SHA --state-dir $2 --mechanism podman --quiet"
}
echo "== podman run of true, $TREES trees of $FILES files + toolchain: A = images ($SEALRUN), B = live ($BASE)"
echo "   load before: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 "$HERE/paired.py" -n "$RUNS" --warmup 2 --vs "$(run "$BASE" "$W/state-b")" -- \
  $(run "$SEALRUN" "$W/state-a")
echo "   load after: $(cut -d' ' -f1-3 /proc/loadavg)"
# What A's receipts say the pins were served as (the last run's).
last=$(ls -t "$W/state-a/results" | head -1)
grep -o '"served": *"[a-z]*"' "$W/state-a/results/$last/receipt.json" | sort | uniq -c
