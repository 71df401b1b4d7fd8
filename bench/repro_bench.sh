#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# `sealrun rebuild --vary all` against reprotest (issue 26 point 6), on GNU hello 2.10 (the release
# tarball of tests/fixtures/hello_source.sh), and what each variation costs. Run as root from the
# top of a build; the machine may be shared, so every figure is paired (bench/paired.py: A B A B
# ..., the ratio taken pair by pair) and the load average is printed before and after.
#
#   1. Head to head, the same job twice and compared, under the same variations:
#      A: `sealrun run` of the admission (the control) + `sealrun rebuild --vary all` of the
#         first run's receipt (the experiment, compared by path and digest);
#      B: `reprotest --vary=+all,-environment,-user_group --no-diffoscope` of the same source
#         with the same build command, its `null` virtual server (a control build and an
#         experiment build in /tmp on this host, compared with diff).
#      reprotest's user_group needs sudo and spare accounts, and its `environment` adds variables
#      sealrun's job never sees (its environment is the admitted one): both left out. reprotest
#      calls sealrun's hostname "domain_host" and its locale "locales"; the rest share names.
#   2. The cost of each variation: `rebuild --vary V` against `rebuild` with none, paired, for
#      each of the 14, on PROJECT (default: tests/repro/projects/clean, a job of a few
#      milliseconds, so the difference is the variation's own set-up; PROJECT=hello for hello).
#
#   SEALRUN=build/sealrun bench/repro_bench.sh [RUNS]   # default 3 pairs each, one warm-up pair
#   SEALRUN=build/sealrun bench/repro_bench.sh --short  # one pair each, no warm-up (CI smoke)
# The admission of hello is learned once (`admit freeze --learn`, as bench/realproj_bench.sh does).
set -eu
SEALRUN=${SEALRUN:-build/sealrun}
FIXTURES=${FIXTURES:-build/fixtures}
PROJECT=${PROJECT:-clean}
RUNS=3
WARMUP=1
if [ "${1:-}" = --short ]; then
  RUNS=1
  WARMUP=0
elif [ -n "${1:-}" ]; then
  RUNS=$1
fi
here=$(cd "$(dirname "$0")/.." && pwd)
case $SEALRUN in /*) ;; *) SEALRUN=$PWD/$SEALRUN ;; esac
case $FIXTURES in /*) ;; *) FIXTURES=$PWD/$FIXTURES ;; esac
[ "$(id -u)" = 0 ] || { echo "repro_bench.sh: run as root (--learn and reprotest need it)" >&2; exit 1; }
[ -x "$SEALRUN" ] || { echo "repro_bench.sh: no sealrun at $SEALRUN (set SEALRUN)" >&2; exit 1; }
command -v reprotest >/dev/null ||
  { echo "repro_bench.sh: reprotest is not installed (apt-get install reprotest disorderfs)" >&2; exit 1; }
bash "$here/tests/fixtures/hello_source.sh" "$FIXTURES" >/dev/null
paired="/usr/bin/python3 $here/bench/paired.py -n $RUNS --warmup $WARMUP"

W=$(mktemp -d /tmp/sealrun-repro-bench.XXXXXX)
trap 'rm -rf "$W"' EXIT
chmod 0711 "$W"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs"

# admit NAME SOURCE SCRIPT [freeze options]: W/NAME.json and its run W/state/results/NAME.
admit() {
  name=$1 source=$2 script=$3
  shift 3
  "$SEALRUN" admit freeze --out "$W/$name.json" --source "$source" --state-dir "$W/state" \
    --env PATH=/usr/bin:/bin --set limits.wall_clock_s=1200 "$@" -- /bin/sh -c "$script" \
    >"$W/$name.freeze" 2>"$W/$name.freeze-err" ||
    { tail -n 20 "$W/$name.freeze-err" >&2; echo "repro_bench.sh: admitting $name failed" >&2; exit 1; }
  sha=$(head -c 64 "$W/$name.freeze")
  [ -n "${LEARNED:-}" ] && sha=$(/usr/bin/python3 -c \
    'import json,sys; print(json.load(open(sys.argv[1]))["sha256"])' "$W/$name.freeze")
  "$SEALRUN" run "$W/$name.json" --sha256 "$sha" --id "$name" --state-dir "$W/state" \
    --mechanism bwrap >"$W/$name.run" 2>&1 ||
    { tail -n 20 "$W/$name.run" >&2; echo "repro_bench.sh: the run of $name failed" >&2; exit 1; }
  echo "$sha" >"$W/$name.sha"
}

# 1. hello, head to head. The job's build is the one of bench/realproj_bench.sh; reprotest builds
# in its own copy of the source, so its command is the same without the copy.
hello_job='cp -a /src /scratch/s && cd /scratch/s && ./configure --prefix=/usr --disable-nls && make -j2 && make install DESTDIR=/out/root'
hello_reprotest='./configure --prefix=/usr --disable-nls && make -j2 && make install DESTDIR=$PWD/out/root'
LEARNED=1 admit hello "$FIXTURES/hello-src" "$hello_job" --json --learn
# Each command timed is a small script in W (paired.py runs it with sh: no quoting to get wrong).
# rebuild_script NAME VARY: a rebuild of NAME's first run; exit 0 (identical) or 1 (different).
rebuild_script() {
  f="$W/rebuild-$1-${2:-none}.sh"
  cat >"$f" <<EOS
"$SEALRUN" rebuild "$W/state/results/$1/receipt.json" --admission "$W/$1.json" \\
  --mechanism bwrap --vary "$2" >>"$W/log" 2>&1
[ \$? -le 1 ]
EOS
  echo "$f"
}
all=${VARY:-hostname,umask,locale,timezone,build_path,num_cpus,user_id,time,fileordering,kernel,aslr,exec_path,domain_host,home}
cat >"$W/a.sh" <<EOS
"$SEALRUN" run "$W/hello.json" --sha256 $(cat "$W/hello.sha") --state-dir "$W/state" \\
  --mechanism bwrap >>"$W/log" 2>&1 || exit 1
sh "$(rebuild_script hello "$all")"
EOS
cat >"$W/b.sh" <<EOS
cd "$W" && reprotest --vary=+all,-environment,-user_group --no-diffoscope \\
  -c '$hello_reprotest' "$FIXTURES/hello-src" out/root/usr/bin/hello >/dev/null 2>&1
[ \$? -le 1 ]
EOS
echo
echo "== 1. hello: sealrun run + rebuild --vary all (A) against reprotest (B), $RUNS pair(s)"
# What the timed commands print goes to W/log: its end is shown when one of them fails.
$paired --vs "sh $W/b.sh" -- sh "$W/a.sh" || { tail -n 30 "$W/log" >&2; exit 1; }

# 2. Each variation's cost, against a rebuild with none.
cost=$PROJECT
[ "$PROJECT" = hello ] ||
  admit "$cost" "$here/tests/repro/projects/$PROJECT" "/bin/sh /src/build.sh" \
    --tree "${BUSYBOX_BIN:-$FIXTURES/busybox-bin}=/bin"
echo
echo "== 2. the cost of each variation on $cost: rebuild --vary V (A) against rebuild with none (B), $RUNS pair(s)"
none=$(rebuild_script "$cost" "")
for v in $(echo "$all" | tr , ' '); do
  echo "-- $v"
  $paired --vs "sh $none" -- sh "$(rebuild_script "$cost" "$v")" | grep -E '^(A wall|B wall|A/B wall)'
done
echo "load average at end:   $(cut -d' ' -f1-3 /proc/loadavg)"
