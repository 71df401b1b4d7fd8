#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# clang-tidy over sealrun's modules in batches (.ci/tidy calls it; docs/style.md rule 8).
#
# File by file, clang-tidy parses the standard library, fmt, nlohmann/json and CLI11 again for
# every one of ~240 files, and the static analyzer spends clang's default budget on each: ~16
# minutes of two cores, too much for CI. Here the files of one CMake target with the same compile
# flags are concatenated, in compile-database order, 16 at a time (the unity build's batches, so
# files known to compile together are put together) into one .cc under build/tidy-batches/, and
# clang-tidy checks each batch as its main file: the headers are parsed once per batch, and the
# analyzer still analyses every function (it skips functions outside the main file, which is why a
# batch is a concatenation and not a file that #includes the .cc files). Each file starts at a
# known line of its batch, so every diagnostic is mapped back to the file and line it is in. A
# batch that does not compile as a whole (two files' helpers clash) is checked file by file.
#
# The analyzer's exploded graph is capped at MAX_NODES nodes per function (clang's default is
# 225000): a fraction of the time, and a null pointer passed to a callee that reads it, a value a
# callee leaves undefined and its caller returns, a leak or a strcpy are still found (a null
# returned by a callee is not, in any mode: clang suppresses null-return paths by default). --deep keeps clang's default (before a release); --per-file
# checks each file alone with its own compile command, as .ci/tidy did before, for comparing.
#
# Usage: tidy_batches.py [--deep] [--per-file] [-j N] DB_DIR OUT_DIR FILE_REGEX
# Prints every finding as FILE:LINE:COL: warning: TEXT [CHECK], sorted and unique, and exits 1
# when there is one, 0 after "tidy: clean".
import argparse
import concurrent.futures
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

BATCH_SIZE = 16
MAX_NODES = 20000
# The budget as the compiler's own flags (clang-tidy has no option of its own for it).
BUDGET_ARGS = ["-Xclang", "-analyzer-config", "-Xclang", f"max-nodes={MAX_NODES}"]
# A diagnostic line of clang-tidy: PATH:LINE:COL: SEVERITY: TEXT [CHECK].
DIAG = re.compile(r"^(?P<path>[^:\s][^:]*):(?P<line>\d+):(?P<col>\d+): "
                  r"(?P<sev>warning|error): (?P<text>.*)$")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
MARKER = "// ---- tidy batch: "


def entry_args(entry):
    """The compile command of a compile-database entry as a list of arguments."""
    if "arguments" in entry:
        return list(entry["arguments"])
    return shlex.split(entry["command"])


def target_and_flags(entry):
    """(CMake target, flags without the output and the source): files with the same key may be
    compiled as one translation unit. The target is the CMakeFiles/<target>.dir/ of the output."""
    args = entry_args(entry)
    out = entry.get("output", "")
    flags = []
    skip = False
    for i, a in enumerate(args):
        if skip:
            skip = False
            continue
        if a == "-o" and i + 1 < len(args):
            out = out or args[i + 1]
            skip = True
            continue
        if a == "-c" or a == entry["file"] or os.path.join(entry["directory"], a) == entry["file"]:
            continue
        flags.append(a)
    m = re.search(r"CMakeFiles/([^/]+)\.dir/", out)
    return (m.group(1) if m else "", entry["directory"], tuple(flags))


def plan_batches(entries, size=BATCH_SIZE):
    """Groups entries by target and flags, keeping the database's order, into batches of at most
    `size`. Returns a list of (name, [entries])."""
    groups = {}
    for e in entries:
        groups.setdefault(target_and_flags(e), []).append(e)
    batches = []
    for (target, _, _), members in groups.items():
        for n in range(0, len(members), size):
            name = f"{target or 'files'}_{n // size}"
            while any(b[0] == name for b in batches):
                name += "x"
            batches.append((name, members[n:n + size]))
    return batches


def write_batch(out_dir, name, members):
    """Writes the concatenation of the members' files as OUT_DIR/NAME.cc. Returns (path, table),
    table being [(first batch line, file, number of lines)] in order."""
    path = os.path.join(out_dir, name + ".cc")
    table = []
    line = 1
    with open(path, "w", encoding="utf-8") as out:
        for e in members:
            with open(e["file"], encoding="utf-8") as f:
                text = f.read()
            if text and not text.endswith("\n"):
                text += "\n"
            out.write(f"{MARKER}{e['file']}\n")
            line += 1
            n = text.count("\n")
            table.append((line, e["file"], n))
            out.write(text)
            line += n
    return path, table


def map_location(table, line):
    """The (file, line) that line `line` of a batch comes from, or None (a marker line)."""
    for start, path, n in table:
        if start <= line < start + n:
            return path, line - start + 1
    return None


def findings(output, tables):
    """The findings in clang-tidy's output as 'FILE:LINE:COL: SEVERITY: TEXT' lines, each batch
    location mapped to its file's own. tables: {batch path: table}. Notes are left out."""
    found = []
    for raw in output.splitlines():
        m = DIAG.match(ANSI.sub("", raw))
        if not m:
            continue
        path, line = m["path"], int(m["line"])
        table = tables.get(os.path.normpath(path))
        if table is not None:
            where = map_location(table, line)
            if where is not None:
                path, line = where
        found.append(f"{path}:{line}:{m['col']}: {m['sev']}: {m['text']}")
    return found


def does_not_compile(lines):
    return any(line.endswith("[clang-diagnostic-error]") for line in lines)


TIMES = []  # (CPU s, wall s, source) of every clang-tidy run, for --times


def run_tidy(db_dir, source, extra):
    """clang-tidy's output for `source`, with one more error line when it failed without saying
    why in a diagnostic (a crash, no compile command): that must not pass for clean."""
    cmd = ["clang-tidy", "--quiet", "-p", db_dir, *extra, source]
    start = time.monotonic()
    with tempfile.TemporaryFile(mode="w+") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        TIMES.append((usage.ru_utime + usage.ru_stime, time.monotonic() - start, source))
        out.seek(0)
        text = out.read()
    return text + failure_line(source, proc.returncode, text)


def failure_line(source, status, text):
    """An error line for a clang-tidy run that failed with no error diagnostic, or ''."""
    if status == 0 or "[clang-diagnostic-error]" in text:
        return ""
    last = [line for line in text.splitlines() if line.strip()][-1:] or ["no output"]
    return (f"\n{source}:1:1: error: clang-tidy exited with status {status} ({last[0][:200]}) "
            "[clang-diagnostic-error]\n")


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--deep", action="store_true", help="clang's default analyzer budget")
    ap.add_argument("--per-file", action="store_true", help="each file alone, no batches")
    ap.add_argument("--times", action="store_true", help="each clang-tidy run's CPU and wall")
    ap.add_argument("-j", type=int, default=os.cpu_count() or 1)
    ap.add_argument("db_dir")
    ap.add_argument("out_dir")
    ap.add_argument("file_regex")
    opt = ap.parse_args(argv)
    opt.out_dir = os.path.abspath(opt.out_dir)

    with open(os.path.join(opt.db_dir, "compile_commands.json"), encoding="utf-8") as f:
        db = json.load(f)
    pick = re.compile(opt.file_regex)
    entries, seen = [], set()
    for e in db:
        path = os.path.normpath(os.path.join(e["directory"], e["file"]))
        if pick.search(path) and path not in seen:
            seen.add(path)
            entries.append(dict(e, file=path))
    if not entries:
        print(f"tidy: no file of {opt.db_dir}/compile_commands.json matches {opt.file_regex}",
              file=sys.stderr)
        return 2
    extra = [] if opt.deep else [f"--extra-arg={a}" for a in BUDGET_ARGS]
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, opt.j))

    def per_file(members):
        jobs = [pool.submit(run_tidy, opt.db_dir, e["file"], extra) for e in members]
        return [line for j in jobs for line in findings(j.result(), {})]

    if opt.per_file:
        # Longest first would need sizes; files are similar enough. A thread per file waits.
        results = per_file(entries)
        batches = []
    else:
        os.makedirs(opt.out_dir, exist_ok=True)
        for old in os.listdir(opt.out_dir):
            if old.endswith(".cc"):
                os.remove(os.path.join(opt.out_dir, old))
        batches, out_db = [], []
        for name, members in plan_batches(entries):
            path, table = write_batch(opt.out_dir, name, members)
            args = [a for a in target_and_flags(members[0])[2]] + ["-c", path]
            out_db.append({"directory": members[0]["directory"], "arguments": args, "file": path})
            batches.append((path, members, table))
        with open(os.path.join(opt.out_dir, "compile_commands.json"), "w", encoding="utf-8") as f:
            json.dump(out_db, f, indent=1)
        # The largest batches first, so that the last one to finish is a small one.
        batches.sort(key=lambda b: -sum(n for _, _, n in b[2]))
        jobs = [(b, pool.submit(run_tidy, opt.out_dir, b[0], extra)) for b in batches]
        results = []
        for (path, members, table), job in jobs:
            got = findings(job.result(), {os.path.normpath(path): table})
            if does_not_compile(got):
                print(f"tidy: {os.path.basename(path)} does not compile as one file; "
                      f"checking its {len(members)} files one by one", file=sys.stderr)
                got = per_file(members)
            results.extend(got)
    pool.shutdown()
    if opt.times:
        for cpu, wall, source in sorted(TIMES, reverse=True):
            print(f"tidy: {cpu:7.1f} CPU s {wall:7.1f} s wall  {source}", file=sys.stderr)
        print(f"tidy: {sum(t[0] for t in TIMES):.1f} CPU s in all", file=sys.stderr)
    unique = sorted(set(results))
    for line in unique:
        print(line)
    mode = "per file" if opt.per_file else f"{len(batches)} batches"
    budget = "deep" if opt.deep else f"max-nodes={MAX_NODES}"
    if unique:
        print(f"tidy: {len(unique)} findings in {len(entries)} files ({mode}, {budget})",
              file=sys.stderr)
        return 1
    print(f"tidy: clean ({len(entries)} files, {mode}, {budget})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
