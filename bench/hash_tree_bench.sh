#!/bin/bash
# Tree hashing throughput: `sealrun fingerprint tree` against the simple peers, in the same run on
# the same warm tree, plus what `openssl speed` says two cores can hash (the ceiling).
#
#   bench/hash_tree_bench.sh [SCALE_PERCENT] [WORKDIR]
#
# SCALE_PERCENT 100 (default) = ~20,000 files, ~1.9 GiB (bench/gen_toolchain_tree.cc). The tree
# lives in WORKDIR (default: a fresh directory under /var/tmp) and is removed afterwards.
# Set SEALRUN_BUILD to the build directory (default: ./build). Each tool runs RUNS times (default
# 3), interleaved, and its best time counts: on a shared machine the best run is the one least
# disturbed by others. Not part of ctest.
set -euo pipefail

scale=${1:-100}
build=${SEALRUN_BUILD:-build}
runs=${RUNS:-3}
jobs=2
sealrun=$build/sealrun
gen=$build/bench/gen_toolchain_tree
for f in "$sealrun" "$gen"; do
  [[ -x $f ]] || { echo "missing $f: build the sealrun and gen_toolchain_tree targets" >&2; exit 2; }
done
for p in openssl sha256sum hashdeep xargs; do
  command -v $p >/dev/null || { echo "missing $p" >&2; exit 2; }
done

work=${2:-$(mktemp -d /var/tmp/sealrun-hashbench.XXXXXX)}
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
tree=$work/tree

echo "== generating tree (scale $scale%) in $tree"
"$gen" "$tree" "$scale"
bytes=$(find "$tree" -type f -printf '%s\n' | awk '{s+=$1} END {print s}')
files=$(find "$tree" -type f | wc -l)
echo "== $files files, $bytes bytes; warming the page cache"
find "$tree" -type f -print0 | xargs -0 -n 256 cat >/dev/null
find "$tree" -type f -print0 | xargs -0 -n 256 cat >/dev/null

now() { date +%s.%N; }
calc() { awk "BEGIN { print $1 }"; }  # floating-point arithmetic without bc
declare -A best
time_it() {  # name command...
  local name=$1; shift
  local t0 t1 dt
  t0=$(now)
  "$@" >/dev/null
  t1=$(now)
  dt=$(calc "$t1 - $t0")
  if [[ -z ${best[$name]:-} ]] || [[ $(calc "$dt < ${best[$name]}") == 1 ]]; then
    best[$name]=$dt
  fi
  printf '   %-28s %7.3f s\n' "$name" "$dt"
}

run_sealrun() { rm -f "$work/inv.jsonl"; "$sealrun" fingerprint tree "$tree" --out "$work/inv.jsonl" --json; }
run_openssl() { find "$tree" -type f -print0 | xargs -0 -P$jobs -n 256 openssl dgst -sha256; }
run_sha256sum() { find "$tree" -type f -print0 | xargs -0 -P$jobs -n 256 sha256sum; }
run_hashdeep() { hashdeep -c sha256 -j$jobs -r "$tree"; }

names=("sealrun fingerprint tree" "find|xargs -P2 openssl dgst" "find|xargs -P2 sha256sum" "hashdeep -j2 -r")
fns=(run_sealrun run_openssl run_sha256sum run_hashdeep)
for ((r = 1; r <= runs; r++)); do
  echo "== round $r of $runs"
  for i in "${!names[@]}"; do time_it "${names[$i]}" "${fns[$i]}"; done
done

echo "== openssl speed -evp sha256 -multi $jobs (1 MiB blocks, 3 s)"
speed_k=$(openssl speed -evp sha256 -multi $jobs -seconds 3 -bytes 1048576 2>/dev/null |
  awk '/^sha256/ {v=$NF} END {sub(/k$/, "", v); print v}')
speed=$(calc "$speed_k * 1000 / 1000000")

echo
echo "== results: $files files, $(calc "int($bytes / 1048576)") MiB, warm cache, $jobs cores, best of $runs"
mbps() { calc "$bytes / ${best[$1]} / 1000000"; }
peer=$(mbps "find|xargs -P2 openssl dgst")
printf '%-30s %9s %10s %12s\n' tool seconds "MB/s" "vs openssl"
for name in "${names[@]}"; do
  m=$(mbps "$name")
  printf '%-30s %9.3f %10.1f %11.2fx\n' "$name" "${best[$name]}" "$m" "$(calc "$m / $peer")"
done
ours=$(mbps "sealrun fingerprint tree")
printf '%-30s %9s %10.1f\n' "openssl speed (2 cores)" - "$speed"
printf 'sealrun / openssl-speed ceiling: %.0f%%   (targets: >= 1.5x the openssl pipeline, >= 80%% of the ceiling)\n' \
  "$(calc "100 * $ours / $speed")"
