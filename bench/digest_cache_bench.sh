#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Re-verifying an unchanged tree through the digest cache against hashing it in full, both warm,
# in the same rounds (docs/digest-cache.md; bench/README.md, "Digest cache").
#
#   bench/digest_cache_bench.sh [TREE]        TREE: default /usr
#
# RUNS (default 5) rounds, each timing `verify_tree_bench cached TREE STATE` (a stat walk through
# the cache) and `verify_tree_bench full TREE` (tree_digest(): every file read and hashed, what
# every run paid before the cache); the MEDIAN counts. The cache is filled, and the page cache
# warmed, by an untimed first run of each. Set SEALRUN_BUILD to the build directory (default:
# ./build). Not part of ctest.
set -euo pipefail

tree=${1:-/usr}
build=${SEALRUN_BUILD:-build}
runs=${RUNS:-5}
tool=$build/bench/verify_tree_bench
[[ -x $tool ]] || { echo "missing $tool: build the verify_tree_bench target" >&2; exit 2; }
state=$(mktemp -d /var/tmp/sealrun-cachebench.XXXXXX)
chmod 700 "$state"
trap 'rm -rf "$state"' EXIT

now() { date +%s.%N; }
calc() { awk "BEGIN { print $1 }"; }
median() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

echo "== filling the cache and warming the page cache ($tree)"
"$tool" cached "$tree" "$state" >/dev/null
full_digest=$("$tool" full "$tree")
cached=""
full=""
for ((r = 1; r <= runs; r++)); do
  t0=$(now); out=$("$tool" cached "$tree" "$state"); t1=$(now)
  cached="$cached $(calc "$t1 - $t0")"
  t0=$(now); digest=$("$tool" full "$tree"); t1=$(now)
  full="$full $(calc "$t1 - $t0")"
  [[ ${out%% *} == "$digest" ]] || { echo "digests differ: ${out%% *} vs $digest" >&2; exit 1; }
  printf '   round %d: cached %.3f s, full %.3f s\n' "$r" "${cached##* }" "${full##* }"
done
mc=$(median "$cached")
mf=$(median "$full")
echo
echo "== $tree, warm, median of $runs (digest ${full_digest:0:16}...)"
printf 'through the cache (stat walk)   %8.3f s\n' "$mc"
printf 'hashed in full                  %8.3f s\n' "$mf"
printf 'speed-up                        %8.1fx   (goal: >= 20x)\n' "$(calc "$mf / $mc")"
echo "pin_cache of the last cached run: ${out#* }"
