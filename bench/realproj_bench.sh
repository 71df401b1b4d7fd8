#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Learning a real project against building it bare (issue 25): for GNU hello 2.10 (automake) and
# fmtlib 9.1.0 (CMake), the release tarballs of the test fixtures (tests/fixtures/hello_source.sh,
# fmt_source.sh), times `sealrun admit freeze --learn` of the build (the learning run, hashing the
# closure and the proving run: everything until the admission is written) against the same build
# run directly on the host as the job user, from a copy of the same tree in a temp directory. In
# turn (bare, learn, bare, learn, ...), so drift on a busy machine hits both alike; with more than
# one round, one untimed warm-up round first. Prints each round (seconds), the medians, the ratio
# learn / bare per project and for the pair (the goal: <= 3x), and the learned closure's size
# (host_files, host_links, host_dirs and the files' bytes, from `admit freeze --learn --json`).
# With RUNS=1, each round also times one `sealrun run` of the admission it learned (the steady
# cost once learned). PROJECTS="fmt" chooses the projects (hello, fmt and lua: Lua 5.4.4, a plain
# Makefile, tests/fixtures/lua_source.sh); LEARN_ARGS adds options to every
# `admit freeze --learn` (e.g. "--learn-exclude /etc/ssl/certs/ca-certificates.crt").
# Run as root (--learn needs it), from the top of a build:
#   SEALRUN=build/sealrun bench/realproj_bench.sh [ROUNDS]     # default 3 rounds, both projects
#   SEALRUN=build/sealrun bench/realproj_bench.sh --short      # hello once, no warm-up (smoke)
set -eu
SEALRUN=${SEALRUN:-build/sealrun}
FIXTURES=${FIXTURES:-build/fixtures}
JOB_USER=${SEALRUN_JOB_USER:-sealrun}
RUNS=${RUNS:-0}
projects=${PROJECTS:-hello fmt}
LEARN_ARGS=${LEARN_ARGS:-}
ROUNDS=3
if [ "${1:-}" = --short ]; then
  projects=hello
  ROUNDS=1
elif [ -n "${1:-}" ]; then
  ROUNDS=$1
fi
here=$(cd "$(dirname "$0")/.." && pwd)
case $SEALRUN in /*) ;; *) SEALRUN=$PWD/$SEALRUN ;; esac
[ "$(id -u)" = 0 ] || { echo "realproj_bench.sh: run as root (--learn needs it)" >&2; exit 1; }
[ -x "$SEALRUN" ] || { echo "realproj_bench.sh: no sealrun at $SEALRUN (set SEALRUN)" >&2; exit 1; }
bash "$here/tests/fixtures/hello_source.sh" "$FIXTURES" >/dev/null
bash "$here/tests/fixtures/fmt_source.sh" "$FIXTURES" >/dev/null
case " $projects " in *" lua "*) bash "$here/tests/fixtures/lua_source.sh" "$FIXTURES" >/dev/null ;; esac

# The build of each project, written once for the job's paths (/src, /scratch, /out); the bare
# build gets the same text with those three replaced by host directories.
script_hello='cp -a /src /scratch/s && cd /scratch/s && ./configure --prefix=/usr --disable-nls && make -j2 && make install DESTDIR=/out/root'
script_lua='cp -a /src /scratch/l && cd /scratch/l && make -j2 linux && make install INSTALL_TOP=/out/root/usr'
script_fmt='cmake -S /src -B /scratch/b -DFMT_TEST=OFF -DFMT_DOC=OFF -DCMAKE_BUILD_TYPE=Release && cmake --build /scratch/b -j2 && DESTDIR=/out/root cmake --install /scratch/b'
script_of() {
  case $1 in
    hello) printf '%s' "$script_hello" ;;
    fmt) printf '%s' "$script_fmt" ;;
    lua) printf '%s' "$script_lua" ;;
  esac
}
tree_of() { printf '%s/%s-src' "$FIXTURES" "$1"; }

W=$(mktemp -d /tmp/sealrun-realproj.XXXXXX)
trap 'rm -rf "$W"' EXIT
chmod 0711 "$W"
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# bare PROJECT N: the build as the job user, in W/bare-PROJECT-N/{src,scratch,out}; its wall ms.
bare() {
  d=$W/bare-$1-$2
  mkdir -p "$d/scratch" "$d/out"
  cp -a "$(tree_of "$1")" "$d/src"  # the tarball's own mtimes, as a developer's unpacked tree
  chown -R "$JOB_USER:" "$d"
  cmd=$(script_of "$1" | sed -e "s#/src#$d/src#g; s#/scratch#$d/scratch#g; s#/out#$d/out#g")
  t=$(now_ms)
  setpriv --reuid="$JOB_USER" --regid="$JOB_USER" --clear-groups -- \
    env -i PATH=/usr/bin:/bin /bin/sh -c "$cmd" >"$d.log" 2>&1 ||
    { tail -n 20 "$d.log" >&2; echo "realproj_bench.sh: bare build of $1 failed" >&2; exit 1; }
  echo $(($(now_ms) - t))
  rm -rf "$d"
}

# learn PROJECT N: `admit freeze --learn` of the build into W/PROJECT-N.json; its wall ms. The
# printed JSON is kept in W/PROJECT-N.out.
learn() {
  t=$(now_ms)
  # shellcheck disable=SC2086 # LEARN_ARGS is split into options on purpose
  "$SEALRUN" admit freeze --out "$W/$1-$2.json" --source "$(tree_of "$1")" \
    --state-dir "$W/state" --env PATH=/usr/bin:/bin --set limits.wall_clock_s=1200 --json \
    $LEARN_ARGS --learn -- /bin/sh -c "$(script_of "$1")" >"$W/$1-$2.out" 2>"$W/$1-$2.err" ||
    { tail -n 20 "$W/$1-$2.err" >&2; echo "realproj_bench.sh: learning $1 failed" >&2; exit 1; }
  echo $(($(now_ms) - t))
}

# run PROJECT N: one `sealrun run` of what `learn PROJECT N` wrote; its wall ms.
run_learned() {
  sha=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["sha256"])' \
    "$W/$1-$2.out")
  t=$(now_ms)
  "$SEALRUN" run "$W/$1-$2.json" --sha256 "$sha" --id "$1-$2" --state-dir "$W/state" --quiet \
    >"$W/$1-$2.run" 2>&1 ||
    { tail -n 20 "$W/$1-$2.run" >&2; echo "realproj_bench.sh: the run of $1 failed" >&2; exit 1; }
  echo $(($(now_ms) - t))
}

echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
: >"$W/rounds"
first=1
[ "$ROUNDS" -gt 1 ] && first=0  # round 0 is the warm-up
i=$first
while [ "$i" -le "$ROUNDS" ]; do
  for p in $projects; do
    b=$(bare "$p" "$i")
    l=$(learn "$p" "$i")
    r=-
    [ "$RUNS" = 1 ] && r=$(run_learned "$p" "$i")
    if [ "$i" -gt 0 ]; then
      echo "$p $i $b $l $r" >>"$W/rounds"
      awk -v p="$p" -v i="$i" -v b="$b" -v l="$l" -v r="$r" 'BEGIN {
        printf "%-5s round %d: bare %6.1f s  learn+prove %6.1f s  (%.2fx)", p, i, b / 1000,
          l / 1000, l / b
        if (r != "-") printf "  run %.1f s", r / 1000
        printf "\n" }'
    fi
  done
  i=$((i + 1))
done
echo "load average at end:   $(cut -d' ' -f1-3 /proc/loadavg)"

# Medians per project, the ratios, and the closure of the last round's admission.
/usr/bin/python3 - "$W" "$projects" "$ROUNDS" <<'EOF'
import json, statistics, sys
w, projects, rounds = sys.argv[1], sys.argv[2].split(), int(sys.argv[3])
rows = [line.split() for line in open(f"{w}/rounds")]
sums = {"bare": 0.0, "learn": 0.0}
print(f"\n{'project':8} {'bare':>8} {'learn+prove':>12} {'ratio':>6} {'run':>8}"
      f" {'files':>6} {'links':>6} {'dirs':>5} {'file MiB':>9}")
for p in projects:
    mine = [r for r in rows if r[0] == p]
    bare = statistics.median(int(r[2]) for r in mine) / 1000
    learn = statistics.median(int(r[3]) for r in mine) / 1000
    runs = [int(r[4]) for r in mine if r[4] != "-"]
    run = f"{statistics.median(runs) / 1000:7.1f}s" if runs else "       -"
    sums["bare"] += bare
    sums["learn"] += learn
    c = json.load(open(f"{w}/{p}-{rounds}.out"))
    print(f"{p:8} {bare:7.1f}s {learn:11.1f}s {learn / bare:5.2f}x {run} {c['host_files']:6d}"
          f" {c['host_links']:6d} {c['host_dirs']:5d} {c['hashed_bytes'] / 2**20:9.1f}")
    extra = {k: v for k, v in c.items() if k.endswith("_ms")}
    print(f"{'':8} (medians of {len(mine)}; last learn's own phases, ms: {extra})")
if len(projects) > 1:
    ratio = sums["learn"] / sums["bare"]
    print(f"together {sums['bare']:7.1f}s {sums['learn']:11.1f}s {ratio:5.2f}x"
          f"  (goal <= 3x: {'met' if ratio <= 3 else 'missed'})")
EOF
