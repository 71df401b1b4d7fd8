#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# .ci/tidy_batches.py without clang: the batches it plans from a compile database (one CMake
# target and one set of flags per batch, database order, at most 16 files) and the mapping of a
# diagnostic's batch line back to the file and line it comes from, on a batch it writes itself.
#
# Usage: tidy_batches_test.py [SOURCE_DIR]. Exit 0 when every case holds, 1 otherwise.
import os
import sys
import tempfile

src = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                      os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(src, ".ci"))
import tidy_batches as tb  # noqa: E402

failures = []


def check(what, got, want):
    if got != want:
        failures.append(f"{what}: got {got!r}, want {want!r}")


def entry(d, name, target, flags="-O2 -I/r"):
    return {"directory": "/b/" + target, "file": os.path.join(d, name),
            "command": f"/usr/bin/c++ {flags} -o CMakeFiles/{target}.dir/{name}.o -c "
                       f"{os.path.join(d, name)}"}


with tempfile.TemporaryDirectory() as d:
    # Three files of a target, with 3, 1 (no final newline) and 2 lines; then one of another.
    texts = {"a.cc": "int a1;\nint a2;\nint a3;\n", "b.cc": "int b1;",
             "c.cc": "int c1;\nvoid f() { for (auto s : v) {} }\n", "d.cc": "int d1;\n"}
    for name, text in texts.items():
        with open(os.path.join(d, name), "w") as f:
            f.write(text)
    entries = [entry(d, "a.cc", "lib"), entry(d, "b.cc", "lib"), entry(d, "d.cc", "other"),
               entry(d, "c.cc", "lib")]

    # Batches: by target, database order, at most `size` files each; other flags, other batch.
    plan = tb.plan_batches(entries)
    check("batches", [(n, [os.path.basename(e["file"]) for e in m]) for n, m in plan],
          [("lib_0", ["a.cc", "b.cc", "c.cc"]), ("other_0", ["d.cc"])])
    plan2 = tb.plan_batches(entries, size=2)
    check("batches of 2", [(n, len(m)) for n, m in plan2],
          [("lib_0", 2), ("lib_1", 1), ("other_0", 1)])
    flagged = entries[:2] + [entry(d, "c.cc", "lib", flags="-O0 -I/r")]
    check("other flags", [len(m) for _, m in tb.plan_batches(flagged)], [2, 1])
    check("target", tb.target_and_flags(entries[0])[0], "lib")
    check("flags without output and source", tb.target_and_flags(entries[0])[2],
          ("/usr/bin/c++", "-O2", "-I/r"))

    # The batch file: a marker line before each file, the files verbatim.
    out = os.path.join(d, "out")
    os.makedirs(out)
    path, table = tb.write_batch(out, "lib_0", plan[0][1])
    with open(path) as f:
        lines = f.read().split("\n")
    a, b, c = (os.path.join(d, n) for n in ("a.cc", "b.cc", "c.cc"))
    check("table", table, [(2, a, 3), (6, b, 1), (8, c, 2)])
    check("c.cc's line 2 in the batch", lines[9 - 1], "void f() { for (auto s : v) {} }")

    # Every line of the batch maps to its file's line; marker lines map to nothing.
    cases = [(1, None), (2, (a, 1)), (4, (a, 3)), (5, None), (6, (b, 1)), (7, None),
             (8, (c, 1)), (9, (c, 2)), (10, None)]
    for line, want in cases:
        check(f"batch line {line}", tb.map_location(table, line), want)

    # clang-tidy's output, as it prints it: diagnostics in the batch are mapped, in a header are
    # kept, notes and summaries are dropped, colour codes are removed.
    output = "\n".join([
        "3 warnings generated.",
        f"\x1b[1m{path}:9:17: \x1b[0m\x1b[0;1;35mwarning: \x1b[0mloop variable is copied but "
        "only used as const reference; consider making it a const reference "
        "[performance-for-range-copy]\x1b[0m",
        f"{path}:9:12: note: something",
        f"{path}:4:1: error: redefinition of 'x' [clang-diagnostic-error]",
        "/r/core/x.h:12:3: warning: header finding [bugprone-use-after-move]",
        "Suppressed 1000 warnings (1000 in non-user code).",
    ])
    got = tb.findings(output, {os.path.normpath(path): table})
    check("findings", got, [
        f"{c}:2:17: warning: loop variable is copied but only used as const reference; "
        "consider making it a const reference [performance-for-range-copy]",
        f"{a}:3:1: error: redefinition of 'x' [clang-diagnostic-error]",
        "/r/core/x.h:12:3: warning: header finding [bugprone-use-after-move]"])
    check("a batch that does not compile", tb.does_not_compile(got), True)
    check("a batch that compiles", tb.does_not_compile(got[:1] + got[2:]), False)

# A clang-tidy run that failed without an error diagnostic (a crash) is an error, never clean;
# one that failed on compile errors has said so already.
crash = tb.failure_line("/r/x.cc", -11, "Stack dump:\n0. Program arguments: clang-tidy\n")
check("a crash", tb.findings(crash, {}),
      ["/r/x.cc:1:1: error: clang-tidy exited with status -11 (0. Program arguments: clang-tidy) "
       "[clang-diagnostic-error]"])
check("compile errors", tb.failure_line("/r/x.cc", 1, "x [clang-diagnostic-error]\n"), "")
check("a clean run", tb.failure_line("/r/x.cc", 0, ""), "")

for f in failures:
    print(f)
print("tidy_batches: " + ("FAILED" if failures else "ok"))
sys.exit(1 if failures else 0)
