#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# The layering of docs/architecture.md, enforced: every #include "module/..." in a module's own
# sources (.h and .cc; not tests, benchmarks or contrib) must name the module itself or one it may
# depend on. The allowed graph is written here once and matches the module map of
# docs/architecture.md; a new dependency is a decision that changes both. Every offending line is
# printed with the rule it breaks.
#
# Usage: layering_test.py [SOURCE_DIR]. Exit 0 clean, 1 on a forbidden include.
import os
import re
import sys

# module -> the modules its files may include (besides itself). A folder below a module is a
# module of its own when it is listed here (containment/resgroup, containment/ownedfs).
ALLOWED = {
    "core": set(),
    "fingerprint": {"core"},
    "admission": {"core", "fingerprint"},
    "containment/resgroup": {"core"},
    "containment/ownedfs": {"core", "fingerprint"},
    "containment": {"core", "fingerprint", "containment/resgroup", "containment/ownedfs"},
    "census": {"core"},
    "attest": {"core"},
    "learn": {"core", "fingerprint", "admission", "containment"},
    "index": {"core", "attest"},
    "remote": {"core", "fingerprint", "admission", "containment", "containment/resgroup",
               "census"},
    # controller/ in rooms, dependencies one way: cli -> rebuild, run -> receipt -> common.
    "controller/common": {"core", "containment"},
    "controller/receipt": {"core", "fingerprint", "admission", "containment", "census", "attest",
                           "controller/common"},
    "controller/run": {"core", "fingerprint", "admission", "containment", "containment/resgroup",
                       "containment/ownedfs", "census", "attest", "learn", "controller/common",
                       "controller/receipt"},
    "controller/rebuild": {"core", "containment", "containment/resgroup", "controller/common",
                           "controller/receipt"},
    "controller/cli": {"core", "fingerprint", "admission", "containment", "containment/resgroup",
                       "containment/ownedfs", "census", "attest", "learn", "index",
                       "controller/common", "controller/receipt", "controller/run",
                       "controller/rebuild"},
}
# Files that are part of an executable rather than of their module's library: `sealrun runner`
# (linked into build/sealrun) and sealrun-runner's main() are built on the controller's command
# line, as main.cc is.
EXECUTABLE_GLUE = {
    "remote/cmd_runner.cc": {"controller/cli", "controller/common"},
    "remote/cmd_runner_unavailable.cc": {"controller/cli", "controller/common"},
    "remote/runner_main.cc": {"controller/cli", "controller/common"},
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
# The controller asks a mechanism what it needs (containment/mechanism.h) and never decides by its
# name: a comparison with a mechanism's name in controller/ is a branch a new mechanism would miss.
MECHANISM_NAME_TEST = re.compile(r'[=!]=\s*"(bwrap|podman)"|"(bwrap|podman)"\s*[=!]=|'
                                 r'[=!]=\s*MechanismKind::|MechanismKind::\w+\s*[=!]=')


def module_of(path):
    """The module a repository path belongs to: the longest listed folder it lies in."""
    best = None
    for m in ALLOWED:
        if path.startswith(m + "/") and (best is None or len(m) > len(best)):
            best = m
    return best


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), "..", ".."))
    problems = []
    for top in sorted({m.split("/")[0] for m in ALLOWED}):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if not name.endswith((".h", ".cc")):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, name), root)
                mine = module_of(rel)
                allowed = ALLOWED[mine] | {mine} | EXECUTABLE_GLUE.get(rel, set())
                with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
                    for n, line in enumerate(f, 1):
                        if mine.startswith("controller") and MECHANISM_NAME_TEST.search(line):
                            problems.append(f"{rel}:{n}: the controller compares a mechanism's "
                                            "name; ask the Mechanism instead (mechanism.h)")
                        match = INCLUDE.match(line)
                        if not match:
                            continue
                        theirs = module_of(match.group(1))
                        if theirs is None or theirs in allowed:
                            continue  # a generated or third-party header, or an allowed one
                        problems.append(f"{rel}:{n}: {mine} may not include {match.group(1)} "
                                        f"({theirs} is not among {mine}'s dependencies: "
                                        f"{', '.join(sorted(ALLOWED[mine])) or 'none'})")
    for p in problems:
        print(p)
    if problems:
        print(f"layering: {len(problems)} line(s) against docs/architecture.md's module map "
              "(tests/repo/layering_test.py holds the allowed graph)", file=sys.stderr)
        return 1
    print("layering: clean")
    return 0


if __name__ == "__main__":
    sys.exit(main())
