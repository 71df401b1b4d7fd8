#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Times a command against a peer in paired runs: A B A B ..., so that drift on a shared machine
hits both alike, and the ratio A/B is taken pair by pair. Every figure covers the whole process
(start-up included): wall from a monotonic clock around start and reap, CPU (user + system) from
the kernel's accounting of the reaped child and its waited-for descendants (wait4's rusage).

    bench/paired.py [-n RUNS] [--warmup W] --vs 'COMMAND_B' -- COMMAND_A [ARG ...]

COMMAND_B is one string split as a shell splits words (no shell runs it: write sh -c '...' for a
pipe). Both commands' output is discarded. Prints min, median and max of each figure and of the
per-pair ratios; quote the medians. Python's standard library only (Debian's /usr/bin/python3).
"""
import argparse
import os
import shlex
import statistics
import subprocess
import sys
import time


def run_once(argv):
    start = time.monotonic_ns()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = (time.monotonic_ns() - start) / 1e9
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    if proc.returncode != 0:
        sys.exit(f"paired.py: {shlex.join(argv)} exited {proc.returncode}")
    return wall, usage.ru_utime + usage.ru_stime


def row(name, values, digits):
    fmt = f"{{:>12.{digits}f}}"
    print(f"{name:<10}" + "".join(fmt.format(v) for v in
                                  (min(values), statistics.median(values), max(values))))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", "--runs", type=int, default=15, help="pairs counted (default 15)")
    parser.add_argument("--warmup", type=int, default=1, help="pairs run first, not counted")
    parser.add_argument("--vs", required=True, help="the peer command B, one string")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND_A [ARG ...]")
    args = parser.parse_args()
    a = args.command[1:] if args.command[:1] == ["--"] else args.command
    b = shlex.split(args.vs)
    if not a or not b or args.runs < 1 or args.warmup < 0:
        parser.error("give --vs 'B', then -- A [ARG ...]; RUNS >= 1, WARMUP >= 0")
    for _ in range(args.warmup):
        run_once(a)
        run_once(b)
    figures = {k: [] for k in ("A wall", "A cpu", "B wall", "B cpu", "A/B wall", "A/B cpu")}
    for _ in range(args.runs):
        aw, ac = run_once(a)
        bw, bc = run_once(b)
        for k, v in (("A wall", aw), ("A cpu", ac), ("B wall", bw), ("B cpu", bc)):
            figures[k].append(v)
        figures["A/B wall"].append(aw / bw)
        if bc > 0:
            figures["A/B cpu"].append(ac / bc)
    print(f"A = {shlex.join(a)}\nB = {shlex.join(b)}\n{args.runs} pairs, seconds "
          f"(ratios per pair)\n{'':<10}{'min':>12}{'median':>12}{'max':>12}")
    for k, values in figures.items():
        if values:
            row(k, values, 4 if k.startswith("A/B") else 3)


if __name__ == "__main__":
    main()
