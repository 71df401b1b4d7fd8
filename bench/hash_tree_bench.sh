#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Tree hashing throughput: `sealrun fingerprint tree` against the simple peers, in the same run on
# the same tree, plus what `openssl speed` says two cores can hash (the ceiling).
#
#   bench/hash_tree_bench.sh [SCALE_PERCENT] [WORKDIR]
#
# Environment:
#   SHAPE    toolchain (default) | mixed | huge | small: the tree bench/gen_toolchain_tree.cc
#            makes (see there; SCALE_PERCENT 100 is its full size)
#   RUNS     timed runs per tool (default 5), interleaved round by round; the MEDIAN counts
#   COLD=1   drop the page cache (sync; echo 3 > /proc/sys/vm/drop_caches, as root) before every
#            timed run, outside the timed span; then `du -s` is timed too (the metadata-only floor)
#   PEERS    tools besides sealrun (default: ceiling openssl sha256sum hashdeep; cold: openssl du)
#            ceiling = bench/hash_ceiling: the tree's byte count hashed in memory on both cores
#   BASELINE another sealrun binary (say, one built from main) to time in the same rounds
#   KEEP=1   keep the tree in WORKDIR; an existing WORKDIR/tree of the same shape is reused
# Set SEALRUN_BUILD to the build directory (default: ./build). Not part of ctest.
set -euo pipefail

scale=${1:-100}
build=${SEALRUN_BUILD:-build}
runs=${RUNS:-5}
shape=${SHAPE:-toolchain}
cold=${COLD:-0}
jobs=2
sealrun=$build/sealrun
gen=$build/bench/gen_toolchain_tree
ceiling=$build/bench/hash_ceiling
if [[ $cold == 1 ]]; then peers=${PEERS:-openssl du}; else peers=${PEERS:-ceiling openssl sha256sum hashdeep}; fi
for f in "$sealrun" "$gen" "$ceiling"; do
  [[ -x $f ]] || { echo "missing $f: build the sealrun, gen_toolchain_tree and hash_ceiling targets" >&2; exit 2; }
done
for p in openssl sha256sum hashdeep xargs du; do
  command -v $p >/dev/null || { echo "missing $p" >&2; exit 2; }
done
if [[ $cold == 1 && ! -w /proc/sys/vm/drop_caches ]]; then
  echo "COLD=1 needs root (writes /proc/sys/vm/drop_caches)" >&2; exit 2
fi

work=${2:-$(mktemp -d /var/tmp/sealrun-hashbench.XXXXXX)}
mkdir -p "$work"
[[ ${KEEP:-0} == 1 ]] || trap 'rm -rf "$work"' EXIT
tree=$work/tree
if [[ -d $tree && $(cat "$work/shape" 2>/dev/null) == "$shape $scale" ]]; then
  echo "== reusing $tree ($shape, scale $scale%)"
else
  rm -rf "$tree"
  echo "== generating a $shape tree (scale $scale%) in $tree"
  "$gen" "$tree" "$scale" "$shape"
  echo "$shape $scale" >"$work/shape"
fi
bytes=$(find "$tree" -type f -printf '%s\n' | awk '{s+=$1} END {printf "%.0f\n", s}')  # %.0f: no 4.29e+09
files=$(find "$tree" -type f | wc -l)
if [[ $cold == 1 ]]; then
  echo "== $files files, $bytes bytes; the page cache is dropped before every run"
else
  echo "== $files files, $bytes bytes; warming the page cache"
  for _ in 1 2; do find "$tree" -type f -print0 | xargs -0 -n 256 cat >/dev/null; done
fi

now() { date +%s.%N; }
calc() { awk "BEGIN { print $1 }"; }  # floating-point arithmetic without bc
declare -A times
time_it() {  # name command...
  local name=$1; shift
  local t0 t1 dt
  if [[ $cold == 1 ]]; then sync; echo 3 >/proc/sys/vm/drop_caches; fi
  t0=$(now)
  "$@" >/dev/null
  t1=$(now)
  dt=$(calc "$t1 - $t0")
  times[$name]="${times[$name]:-} $dt"
  printf '   %-28s %7.3f s\n' "$name" "$dt"
}
median() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

run_sealrun() { rm -f "$work/inv.jsonl"; "$sealrun" fingerprint tree "$tree" --out "$work/inv.jsonl" --json; }
run_openssl() { find "$tree" -type f -print0 | xargs -0 -P$jobs -n 256 openssl dgst -sha256; }
run_sha256sum() { find "$tree" -type f -print0 | xargs -0 -P$jobs -n 256 sha256sum; }
run_hashdeep() { hashdeep -c sha256 -j$jobs -r "$tree"; }
run_du() { du -s --apparent-size "$tree"; }
run_ceiling() { "$ceiling" "$bytes" $jobs; }
run_baseline() { rm -f "$work/inv.jsonl"; "$BASELINE" fingerprint tree "$tree" --out "$work/inv.jsonl" --json; }
declare -A label=([sealrun]="sealrun fingerprint tree" [openssl]="find|xargs -P2 openssl dgst"
  [sha256sum]="find|xargs -P2 sha256sum" [hashdeep]="hashdeep -j2 -r" [du]="du -s (no hashing)"
  [ceiling]="ceiling (in memory, 2 cores)" [baseline]="baseline sealrun")

tools=(sealrun $peers)
[[ -n ${BASELINE:-} ]] && tools+=(baseline)
for ((r = 1; r <= runs; r++)); do
  echo "== round $r of $runs"
  for t in "${tools[@]}"; do time_it "${label[$t]}" "run_$t"; done
done

echo "== openssl speed -evp sha256 -multi $jobs (1 MiB blocks, 3 s)"
speed_k=$(openssl speed -evp sha256 -multi $jobs -seconds 3 -bytes 1048576 2>/dev/null |
  awk '/^sha256/ {v=$NF} END {sub(/k$/, "", v); print v}')
speed=$(calc "$speed_k * 1000 / 1000000")

state=warm; [[ $cold == 1 ]] && state=cold
echo
echo "== results: $shape, $files files, $(calc "int($bytes / 1048576)") MiB, $state cache, $jobs cores, median of $runs"
declare -A med
for t in "${tools[@]}"; do med[$t]=$(median "${times[${label[$t]}]}"); done
printf '%-30s %9s %10s %12s\n' tool "median s" "MB/s" "vs openssl"
for t in "${tools[@]}"; do
  m=$(calc "$bytes / ${med[$t]} / 1000000")
  vs="-"; [[ -n ${med[openssl]:-} ]] && vs=$(printf '%.2fx' "$(calc "${med[openssl]} / ${med[$t]}")")
  printf '%-30s %9.3f %10.1f %12s\n' "${label[$t]}" "${med[$t]}" "$m" "$vs"
done
printf '%-30s %9s %10.1f\n' "openssl speed (2 cores)" - "$speed"
printf 'sealrun / openssl-speed ceiling: %.0f%%\n' "$(calc "100 * $bytes / ${med[sealrun]} / 1000000 / $speed")"
if [[ -n ${med[ceiling]:-} ]]; then
  printf 'sealrun / in-memory ceiling (same rounds): %.0f%%\n' "$(calc "100 * ${med[ceiling]} / ${med[sealrun]}")"
fi
