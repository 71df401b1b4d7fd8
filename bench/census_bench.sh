#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The walking census against du on the same warm tree: `sealrun census DIR --json` vs
# `du -s --apparent-size DIR`, run in pairs (A B A B ...) so that drift on a shared machine hits
# both alike; prints the median of each and the median of the per-pair ratios du / sealrun.
#
#   bench/census_bench.sh [ROUNDS] [TREE]
#
# ROUNDS defaults to 15. TREE defaults to a fresh 220,100-path tree (bench/gen_census_tree.cc) in
# a temporary directory under /var/tmp, removed afterwards; pass an existing tree to reuse it.
# Set SEALRUN_BUILD to the build directory (default: ./build). Not part of ctest.
set -euo pipefail

rounds=${1:-15}
build=${SEALRUN_BUILD:-build}
sealrun=$build/sealrun
gen=$build/bench/gen_census_tree
for f in "$sealrun" "$gen"; do
  [[ -x $f ]] || { echo "missing $f: build the sealrun and gen_census_tree targets" >&2; exit 2; }
done

if [[ -n ${2:-} ]]; then
  tree=$2
else
  work=$(mktemp -d /var/tmp/sealrun-censusbench.XXXXXX)
  trap 'rm -rf "$work"' EXIT
  tree=$work/tree
  echo "== generating the tree in $tree"
  "$gen" "$tree"
fi

# Warm: the inodes and dentries of the tree in memory for both tools.
du -s --apparent-size "$tree" >/dev/null
"$sealrun" census "$tree" --json >/dev/null

ms() { echo $(( ($2 - $1) / 1000000 )); }
a=() b=() r=()
for ((i = 0; i < rounds; i++)); do
  t0=$(date +%s%N)
  "$sealrun" census "$tree" --json >/dev/null
  t1=$(date +%s%N)
  du -s --apparent-size "$tree" >/dev/null
  t2=$(date +%s%N)
  a+=("$(ms "$t0" "$t1")") b+=("$(ms "$t1" "$t2")")
  r+=("$(awk -v s="$(ms "$t0" "$t1")" -v d="$(ms "$t1" "$t2")" 'BEGIN { printf "%.3f", d / s }')")
done
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
echo "sealrun census: median $(median "${a[@]}") ms   (runs: ${a[*]})"
echo "du -s --apparent-size: median $(median "${b[@]}") ms   (runs: ${b[*]})"
echo "du / sealrun, per pair: median $(median "${r[@]}")x"
