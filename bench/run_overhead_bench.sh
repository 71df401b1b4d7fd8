#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The cost of `sealrun run` over a bare rootless bwrap (issue 17, part 1): `sealrun run` of
# `true` with a tiny source and toolchain (a static busybox), against
# `bwrap --unshare-all ... /bin/true` run as the job user, in turn (A B A B ...), so that drift on a busy machine hits both alike; one untimed
# warm-up pair. Prints each pair (ms) and the medians of A, B and A - B. Run as root (like the
# controller), from the top of a build: SEALRUN=build/sealrun bench/run_overhead_bench.sh [PAIRS]
# With SEALRUN_BASE=/path/to/another/sealrun (e.g. a build of main), each round runs that one
# too (base, sealrun, bare in turn), so a before/after comparison sees the same drift; its median
# and its difference to the bare bwrap are printed as well.
# With DISK_LOAD=1, another writer runs meanwhile on the same disk (dd of 256 MiB with
# conv=fsync into the work directory, over and over), as builds writing to disk would.
set -eu
SEALRUN=${SEALRUN:-build/sealrun}
PAIRS=${1:-15}
SEALRUN_BASE=${SEALRUN_BASE:-}
JOB_USER=${SEALRUN_JOB_USER:-sealrun}
BWRAP=$(command -v bwrap)

W=$(mktemp -d /tmp/sealrun-overhead.XXXXXX)
LOAD_PID=
cleanup() {
  if [ -n "$LOAD_PID" ]; then  # the writer loop, then its dd
    kill -STOP "$LOAD_PID" 2>/dev/null || true
    pkill -P "$LOAD_PID" 2>/dev/null || true
    kill "$LOAD_PID" 2>/dev/null || true
    kill -CONT "$LOAD_PID" 2>/dev/null || true
    wait "$LOAD_PID" 2>/dev/null || true
  fi
  rm -rf "$W"
}
trap cleanup EXIT
chmod 0711 "$W"
mkdir "$W/src" "$W/toolchain"
echo input >"$W/src/input.txt"
# The job sees only what is pinned (no host /usr): its `true` is a static busybox in the toolchain.
cp "$(command -v busybox)" "$W/toolchain/busybox"
"$SEALRUN" admit freeze --out "$W/admission.json" --source "$W/src" --toolchain "$W/toolchain" \
  --toolchain-mount /opt/toolchain --env PATH=/opt/toolchain -- /opt/toolchain/busybox true >"$W/frozen"
SHA=$(head -c 64 "$W/frozen")

# Each binary has a state directory of its own: the bwrap probe cache keeps one entry, keyed by
# (among others) sealrun's version, so two binaries sharing one would re-probe at every turn.
sealrun_true() {  # sealrun_true ID [SEALRUN STATE]
  "${2:-$SEALRUN}" run "$W/admission.json" --sha256 "$SHA" --id "r$1" \
    --state-dir "${3:-$W/state}" --quiet >/dev/null
}
bare_true() {
  setpriv --reuid="$JOB_USER" --regid="$JOB_USER" --clear-groups -- "$BWRAP" --unshare-all \
    --die-with-parent --new-session --cap-drop ALL --ro-bind /usr /usr --symlink usr/bin /bin \
    --symlink usr/lib /lib --symlink usr/lib64 /lib64 --proc /proc --dev /dev --tmpfs /tmp \
    /bin/true
}
now_us() { echo $(($(date +%s%N) / 1000)); }

if [ "${DISK_LOAD:-0}" = 1 ]; then
  (while :; do dd if=/dev/zero of="$W/load" bs=1M count=256 conv=fsync 2>/dev/null; done) &
  LOAD_PID=$!
  sleep 1
fi
: >"$W/pairs"
i=0
while [ "$i" -le "$PAIRS" ]; do
  base=
  if [ -n "$SEALRUN_BASE" ]; then
    z=$(now_us)
    sealrun_true "b$i" "$SEALRUN_BASE" "$W/state-base"
    base=" $((($(now_us) - z) / 1000))"
  fi
  a=$(now_us)
  sealrun_true "$i"
  b=$(now_us)
  bare_true
  c=$(now_us)
  if [ "$i" -gt 0 ]; then  # pair 0 is the warm-up
    echo "$(((b - a) / 1000)) $(((c - b) / 1000))$base" | tee -a "$W/pairs"
  fi
  i=$((i + 1))
done
median() { sort -n | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
echo "median sealrun run: $(cut -d' ' -f1 "$W/pairs" | median) ms"
echo "median bare bwrap:  $(cut -d' ' -f2 "$W/pairs" | median) ms"
echo "median difference:  $(awk '{print $1 - $2}' "$W/pairs" | median) ms"
if [ -n "$SEALRUN_BASE" ]; then
  echo "median base run:    $(cut -d' ' -f3 "$W/pairs" | median) ms"
  echo "median base - bare: $(awk '{print $3 - $2}' "$W/pairs" | median) ms"
  echo "median run - base:  $(awk '{print $1 - $3}' "$W/pairs" | median) ms"
fi
