#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A realistic small job through `sealrun run` against a bare rootless bwrap with the same binds.

The job shape (issue 31): a source of 20 files of 1 KiB, a pinned /bin tree of about 2 MB (a static
busybox and its applet links, `--tree DIR=/bin`), one output written to /out, the growth census
every 100 ms. The peer is `bwrap --unshare-all --die-with-parent --new-session --cap-drop ALL` run
as the job user with the same binds (/src read-only, /bin read-only, /out writable, /proc, /dev,
/tmp) and the same command. Run as root from the top of a build:

    bench/realistic_job_bench.py pair [-n 15] [--trace]     # one at a time, A B A B ...
    bench/realistic_job_bench.py many [--ns 1,2,4,8,16] [--rounds 3]
    bench/realistic_job_bench.py pair --short; bench/realistic_job_bench.py many --short  # CI

`pair` prints each pair and the medians of sealrun, bare and the per-pair difference; with
`--trace` the runs set SEALRUN_TRACE_STAGES (core/stage_trace.h) and the median time of each
stage is printed too (`--base PATH` adds another sealrun binary to each round: before/after).
`many` starts N runs at once (N sealrun runs with distinct ids in one state directory, then N bare
bwraps), waits for all, and prints runs per second of each and the ratio; every exit must be 0
and nothing may be left behind (owned roots, grant records, loop devices on the state directory's
files, mounts below it, processes of the job user): the script fails otherwise. --short runs a few
rounds and asserts no timing (CI: ctest label `bench`).
"""
import argparse
import collections
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

SCRIPT = "cat /src/f*.txt > /out/result.txt"
JOB_USER = os.environ.get("SEALRUN_JOB_USER", "sealrun")


def sh(*argv, **kw):
    return subprocess.run(argv, check=True, capture_output=True, text=True, **kw).stdout


class Shape:
    """The job's inputs, its frozen admission and the two ways to run it."""

    def __init__(self, work, sealrun, files=20):
        self.work = work
        self.sealrun = sealrun
        self.src = os.path.join(work, "src")
        self.bin = os.path.join(work, "bin")
        self.state = os.path.join(work, "state")
        os.chmod(work, 0o711)
        os.makedirs(self.src)
        for i in range(files):
            with open(os.path.join(self.src, f"f{i}.txt"), "w") as f:
                f.write(f"{i:04d}" + "x" * 1019 + "\n")
        os.makedirs(self.bin)
        shutil.copy("/bin/busybox", os.path.join(self.bin, "busybox"))
        for applet in sh("/bin/busybox", "--list").split():
            if applet != "busybox":
                os.symlink("busybox", os.path.join(self.bin, applet))
        os.chmod(self.bin, 0o755)
        self.admission = os.path.join(work, "admission.json")
        self.sha = sh(sealrun, "admit", "freeze", "--out", self.admission, "--source", self.src,
                      "--tree", self.bin + "=/bin", "--state-dir", self.state,
                      "--env", "PATH=/bin", "--set", "limits.census_interval_ms=100",
                      "--", "/bin/sh", "-c", SCRIPT).split()[0]
        self.bwrap = shutil.which("bwrap")
        self.bare_out = os.path.join(work, "bare-out")
        os.makedirs(self.bare_out)
        os.chmod(self.bare_out, 0o711)

    def sealrun_argv(self, run_id, binary=None, state=None):
        return [binary or self.sealrun, "run", self.admission, "--sha256", self.sha, "--id", run_id,
                "--state-dir", state or self.state, "--quiet"]

    def bare_argv(self, run_id):
        out = os.path.join(self.bare_out, run_id)
        os.makedirs(out)
        shutil.chown(out, JOB_USER, JOB_USER)
        return ["setpriv", f"--reuid={JOB_USER}", f"--regid={JOB_USER}", "--clear-groups", "--",
                self.bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop",
                "ALL", "--ro-bind", self.src, "/src", "--ro-bind", self.bin, "/bin", "--bind",
                out, "/out", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--chdir",
                "/src", "--setenv", "PATH", "/bin", "/bin/sh", "-c", SCRIPT]

    def check_output(self, path):
        with open(path) as f:
            assert len(f.read()) == 20 * 1024, path


def timed(argv, env=None):
    t = time.monotonic()
    p = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    took = time.monotonic() - t
    if p.returncode != 0:
        sys.exit(f"exit {p.returncode}: {' '.join(argv)}\n{p.stderr.decode(errors='replace')}")
    return took * 1000


def stage_table(trace_path, starts):
    """Median wall ms from each run's start (taken outside) to each mark and between marks, and
    the median CPU ms of the controller process (all its threads, not bwrap) between marks."""
    per_pid = collections.defaultdict(list)
    with open(trace_path) as f:
        for line in f:
            fields = line.split()  # pid wall_ns [cpu_ns] name (an older build has no CPU time)
            cpu = int(fields[2]) / 1e6 if len(fields) == 4 else float("nan")
            per_pid[int(fields[0])].append((int(fields[1]) / 1e6, cpu, fields[-1]))
    gaps = collections.defaultdict(list)
    cpus = collections.defaultdict(list)
    order = []
    for pid, marks in per_pid.items():
        start = starts.get(pid)
        marks.sort()
        prev_t, prev_cpu, prev_name = (start, 0.0, "process start") if start is not None \
            else marks[0]
        for t, cpu, name in marks:
            if prev_name not in order:
                order.append(prev_name)
            gaps[prev_name].append(t - prev_t)
            cpus[prev_name].append(cpu - prev_cpu)
            prev_t, prev_cpu, prev_name = t, cpu, name
        end = starts.get(("end", pid))
        if end is not None:
            if prev_name not in order:
                order.append(prev_name)
            gaps[prev_name].append(end - prev_t)
    print(f"{'from this mark to the next':<30} {'wall ms':>8} {'cpu ms':>7}")
    for key in order:
        cpu = f"{statistics.median(cpus[key]):7.2f}" if cpus[key] else f"{'':>7}"
        print(f"{key:<30} {statistics.median(gaps[key]):8.2f} {cpu}")
    totals = [sum(v) for v in zip(*[cpus[k] for k in order if len(cpus[k]) == len(per_pid)])]
    if totals:
        print(f"{'controller CPU, start to last mark':<30} {'':>8} {statistics.median(totals):7.2f}")


def pair(args, shape):
    env = dict(os.environ)
    trace = os.path.join(shape.work, "trace.txt") if args.trace else None
    if trace:
        env["SEALRUN_TRACE_STAGES"] = trace
    rows = []
    starts = {}
    base_starts = {}
    for i in range(args.n + 1):  # pair 0 is the warm-up
        base = None
        if args.base:
            base_env = dict(env)
            if trace:
                base_env["SEALRUN_TRACE_STAGES"] = trace + ".base"
            t0 = time.monotonic()
            p = subprocess.Popen(shape.sealrun_argv(f"b{i}", args.base, shape.state + "-base"),
                                 env=base_env, stdout=subprocess.DEVNULL)
            if p.wait() != 0:
                sys.exit(f"the base sealrun run exited {p.returncode}")
            base = (time.monotonic() - t0) * 1000
            base_starts[p.pid] = t0 * 1000
            base_starts[("end", p.pid)] = t0 * 1000 + base
        t0 = time.monotonic()
        p = subprocess.Popen(shape.sealrun_argv(f"r{i}"), env=env, stdout=subprocess.DEVNULL)
        rc = p.wait()
        t1 = time.monotonic()
        if rc != 0:
            sys.exit(f"sealrun run exited {rc}")
        starts[p.pid] = t0 * 1000
        starts[("end", p.pid)] = t1 * 1000
        a = (t1 - t0) * 1000
        shape.check_output(os.path.join(shape.state, "results", f"r{i}", "out", "result.txt"))
        b = timed(shape.bare_argv(f"r{i}"))
        shape.check_output(os.path.join(shape.bare_out, f"r{i}", "result.txt"))
        if i > 0:
            rows.append((a, b, base))
            print(f"{a:7.1f} {b:7.1f}" + (f" {base:7.1f}" if base is not None else ""))
        elif trace:  # the warm-up's stages are not counted
            for path in (trace, trace + ".base"):
                if os.path.exists(path):
                    os.unlink(path)
    med = lambda xs: statistics.median(xs)
    print(f"{args.n} pairs, job: {SCRIPT}")
    print(f"median sealrun run: {med([r[0] for r in rows]):.1f} ms")
    print(f"median bare bwrap:  {med([r[1] for r in rows]):.1f} ms")
    print(f"median difference:  {med([r[0] - r[1] for r in rows]):+.1f} ms")
    if args.base:
        print(f"median base run:    {med([r[2] for r in rows]):.1f} ms")
        print(f"median base - bare: {med([r[2] - r[1] for r in rows]):+.1f} ms")
        print(f"median run - base:  {med([r[0] - r[2] for r in rows]):+.1f} ms")
    if trace:
        print("stages of this sealrun:")
        stage_table(trace, starts)
        if args.base:
            print("stages of the base sealrun:")
            stage_table(trace + ".base", base_starts)


def leftovers(shape):
    """What the runs may have left: a list of descriptions (empty when nothing is left)."""
    found = []
    for sub in ("owned", "grants", "exports"):
        d = os.path.join(shape.state, sub)
        if os.path.isdir(d):
            found += [f"{sub}/{n}" for n in os.listdir(d) if not n.startswith(".")]
    loops = sh("losetup", "--list", "--noheadings", "--output", "NAME,BACK-FILE")
    found += [l for l in loops.splitlines() if shape.work in l and "/pins/" not in l]
    with open("/proc/self/mountinfo") as f:
        found += [l.split()[4] for l in f if shape.work in l.split()[4]]
    ps = subprocess.run(["pgrep", "-u", JOB_USER, "-a"], capture_output=True, text=True).stdout
    found += [l for l in ps.splitlines() if shape.work in l]
    return found


def start_all(argvs, env):
    """Starts every argv at once; waits for all. (wall s, CPU s of all, [(rc, stderr)])."""
    t = time.monotonic()
    procs = [subprocess.Popen(a, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
             for a in argvs]
    cpu = 0.0
    errs = []
    for p in procs:
        err = p.stderr.read()
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        cpu += usage.ru_utime + usage.ru_stime
        errs.append((p.returncode, err))
    took = time.monotonic() - t
    for (rc, err), a in zip(errs, argvs):
        if rc != 0:
            sys.exit(f"exit {rc}: {' '.join(a)}\n{err.decode(errors='replace')}")
    return took, cpu, [p.pid for p in procs], t


def many(args, shape):
    ns = [int(x) for x in args.ns.split(",")]
    kinds = ["sealrun", "bare"] + (["base"] if args.base else [])
    results = {n: {k: [] for k in kinds} for n in ns}
    cpus = {n: {k: [] for k in kinds} for n in ns}
    env = dict(os.environ)
    traces = {}
    # one untimed warm-up run each (the bwrap probe, the pin's image, the digest cache)
    timed(shape.sealrun_argv("warm"))
    if args.base:
        timed(shape.sealrun_argv("warm", args.base, shape.state + "-base"))
    for r in range(args.rounds):
        for n in ns:
            for kind in kinds:
                ids = [f"m{r}-{n}-{k}" for k in range(n)]
                if kind == "sealrun":
                    argvs = [shape.sealrun_argv(i) for i in ids]
                elif kind == "base":
                    argvs = [shape.sealrun_argv(i, args.base, shape.state + "-base") for i in ids]
                else:
                    argvs = [shape.bare_argv(i) for i in ids]
                trace = None
                if args.trace and kind != "bare":
                    trace = os.path.join(shape.work, f"trace-{kind}-{n}.txt")
                    env["SEALRUN_TRACE_STAGES"] = trace
                took, cpu, pids, t0 = start_all(argvs, env)
                env.pop("SEALRUN_TRACE_STAGES", None)
                if trace:
                    starts = traces.setdefault((kind, n), ({}, trace))[0]
                    for pid in pids:  # the start of all, and the end of the last
                        starts[pid] = t0 * 1000
                        starts[("end", pid)] = (t0 + took) * 1000
                results[n][kind].append(took)
                cpus[n][kind].append(cpu / n)
            left = leftovers(shape)
            if left:
                sys.exit(f"left behind after N={n}: {left}")
    print(f"{args.rounds} round(s), job: {SCRIPT}; runs per second and CPU per run (user + "
          f"system of each whole process), medians of rounds")
    head = f"{'N':>3} {'sealrun/s':>10} {'bare/s':>8} {'ratio':>6} {'cpu ms':>7} {'bare cpu':>8}"
    if args.base:
        head += f" {'base/s':>8} {'ratio':>6} {'base cpu':>8}"
    print(head)
    for n in ns:
        med = {k: statistics.median(results[n][k]) for k in kinds}
        cpu = {k: statistics.median(cpus[n][k]) * 1000 for k in kinds}
        line = (f"{n:3d} {n / med['sealrun']:10.1f} {n / med['bare']:8.1f} "
                f"{med['bare'] / med['sealrun']:6.2f} {cpu['sealrun']:7.1f} {cpu['bare']:8.1f}")
        if args.base:
            line += (f" {n / med['base']:8.1f} {med['bare'] / med['base']:6.2f} "
                     f"{cpu['base']:8.1f}")
        print(line)
    print("every exit 0; nothing left behind")
    for (kind, n), (starts, path) in sorted(traces.items()):
        print(f"stages of {kind} with N = {n} at once (from the start of all; the last mark to "
              f"the end of the last run):")
        stage_table(path, starts)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=("pair", "many"))
    parser.add_argument("-n", type=int, default=15, help="pairs (pair)")
    parser.add_argument("--ns", default="1,2,4,8,16", help="runs at once (many)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (many)")
    parser.add_argument("--trace", action="store_true", help="per-stage medians (pair)")
    parser.add_argument("--base", help="another sealrun binary, run in each round too")
    parser.add_argument("--short", action="store_true", help="a few rounds, for CI")
    parser.add_argument("--sealrun", default=os.environ.get("SEALRUN", "build/sealrun"))
    parser.add_argument("--dir", default="/var/tmp",
                        help="where the work directory (source, /bin, state directory) is made")
    args = parser.parse_args()
    if args.short:
        args.n, args.ns, args.rounds, args.trace = 2, "1,2", 1, True
    sealrun = os.path.abspath(args.sealrun)
    with tempfile.TemporaryDirectory(prefix="sealrun-realistic-", dir=args.dir) as work:
        shape = Shape(work, sealrun)
        try:
            (pair if args.mode == "pair" else many)(args, shape)
        finally:
            subprocess.run([sealrun, "sweep", "--state-dir", shape.state], capture_output=True)
            for extra in (shape.state, shape.state + "-base"):
                if os.path.isdir(extra):  # results/<id>/out is root's; pins are flock'd files
                    shutil.rmtree(extra, ignore_errors=True)


if __name__ == "__main__":
    main()
