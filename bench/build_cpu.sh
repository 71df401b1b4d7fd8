#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The build's CPU time (user + sys), without ccache, from clean: how bench/README.md's "Build CPU"
# figures are made.
#   bench/build_cpu.sh full BUILD_DIR [cmake args...]
#       configures a fresh BUILD_DIR from this tree and builds what `.ci/setup` builds (sealrun, its
#       man page and completion; sealrun-runner too where the configuration has it) with -j2 under
#       /usr/bin/time (the figure that matters; needs a quiet machine for a wall time), each
#       compile through bench/tu_time.sh: the CPU per library and the ten heaviest files follow.
#       .ci/setup's configuration: -DSEALRUN_UNITY=ON -DSEALRUN_RUNNER=OFF; the file-by-file
#       one before it: -DSEALRUN_UNITY=OFF -DSEALRUN_RUNNER=ON.
#   bench/build_cpu.sh sample BUILD_DIR [cmake args...]
#       configures BUILD_DIR, builds what the sample's files need first (generated sources, the
#       precompiled header), then compiles each file of the sample below one at a time with its
#       own command from compile_commands.json and sums their CPU time: a figure that a busy
#       machine (other builds running) changes little, since only CPU time is counted.
# Extra cmake args compare configurations, e.g. -DSEALRUN_UNITY=OFF for the before figure.
set -euo pipefail
mode=$1 dir=$2
shift 2
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export CCACHE_DISABLE=1
rm -rf "$dir"
launch=()
if [ "$mode" = full ]; then
  launch=(-DCMAKE_CXX_COMPILER_LAUNCHER="$repo/bench/tu_time.sh"
    -DCMAKE_C_COMPILER_LAUNCHER="$repo/bench/tu_time.sh"
    -DCMAKE_CXX_LINKER_LAUNCHER="$repo/bench/tu_time.sh")
  mkdir -p "$dir"
  export SEALRUN_TU_LOG=$dir/tu.log
fi
cmake -S "$repo" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSEALRUN_WERROR=ON "${launch[@]}" \
  "$@" >/dev/null
cpu() {  # cpu LOG: user + sys seconds from a /usr/bin/time -v log
  awk -F': ' '/User time/ {u=$2} /System time/ {s=$2} END {printf "%.1f", u + s}' "$1"
}
if [ "$mode" = full ]; then
  targets=(sealrun sealrun_cli_docs)
  cmake --build "$dir" --target help | grep -q '\bsealrun-runner\b' && targets+=(sealrun-runner)
  /usr/bin/time -v -o "$dir/time.log" cmake --build "$dir" -j2 --target "${targets[@]}" \
    >"$dir/build.log"
  echo "build_cpu: ${targets[*]} from clean: $(cpu "$dir/time.log") s CPU," \
    "$(awk -F': ' '/Elapsed/ {print $2}' "$dir/time.log") wall"
  # Per library (the folder a file is in; generated protobuf code apart; "link": the links).
  awk -v repo="$repo/" -v dir="$dir/" '{
      f = $2
      if (index(f, dir) == 1) f = substr(f, length(dir) + 1)
      else if (index(f, repo) == 1) f = substr(f, length(repo) + 1)
      if (f ~ /\/gen\//) k = "generated"; else if (f == "link") k = "link"
      else if (f ~ /\/CMakeFiles\//) { k = f; sub(/\/CMakeFiles\/.*/, "", k) }
      else { k = f; sub(/\/[^\/]*$/, "", k) }
      s[k] += $1; n[k]++ }
    END { for (k in s) printf "  %7.1f s  %3d compiles  %s\n", s[k], n[k], k }' "$dir/tu.log" |
    sort -rn
  echo "build_cpu: the ten heaviest compiles:"
  sort -rn "$dir/tu.log" | head -10 | sed "s:$dir/::; s:$repo/::; s:^:  :"
  exit 0
fi
# A sample across the modules and the controller's heaviest files.
sample=(core/strict_json.cc core/process.cc fingerprint/tree.cc fingerprint/image.cc
  admission/parse.cc admission/canonical.cc containment/bwrap_argv.cc containment/podman.cc
  containment/grant_journal.cc census/guards.cc attest/dsse.cc learn/closure.cc
  controller/cli/cmd_run.cc controller/receipt/receipt.cc controller/receipt/receipt_show.cc
  controller/run/run_stage_containment.cc controller/cli/cli_model.cc controller/cli/cmd_receipt.cc)
# What must exist before a file compiles alone: the generated version file.
cmake --build "$dir" --target sealrun_version_stamp >/dev/null
total=0
for f in "${sample[@]}"; do
  cmd=$(python3 -c 'import json,sys
for e in json.load(open(sys.argv[1])):
    if e["file"] == sys.argv[2]: print(e["directory"] + "\t" + e["command"]); break' \
    "$dir/compile_commands.json" "$repo/$f")
  [ -n "$cmd" ] || { echo "build_cpu: $f is not in the build" >&2; exit 1; }
  (cd "${cmd%%$'\t'*}" && /usr/bin/time -v -o "$dir/one.log" bash -c "${cmd#*$'\t'}")
  t=$(cpu "$dir/one.log")
  echo "  $t s  $f"
  total=$(echo "$total + $t" | bc)
done
echo "build_cpu: ${#sample[@]} files: $total s CPU"
