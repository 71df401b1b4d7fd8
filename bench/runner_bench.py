#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Per-action overhead of `sealrun runner` against running the same command directly.

Run as root after building `sealrun` and the harness stubs (target reapi_python_stubs):

    /usr/bin/python3 bench/runner_bench.py [--rounds 15] [--files 20] [--toolchain DIR] [--build build]
    /usr/bin/python3 bench/runner_bench.py --short     # 2 rounds, no timing claims (ctest -L bench)

Each round runs one action three ways, in turn (A B C A B C ...: drift on a shared machine hits
every variant alike), each in a fresh action directory laid out as bb_worker lays it out, with
`--files` input files of 1 KiB:

  direct  the harness runs `/bin/sh -c SCRIPT` itself in the input root, stdout and stderr to the
          action's files: what bb_runner does, without gRPC or containment
  runner  one RunRequest to a running `sealrun runner` over its unix socket: check, freeze the
          admission, `sealrun run` (verify, grant, group, census, the contained job, outputs,
          receipt), ownership, streams and server logs, gRPC included
  run     `sealrun run` alone, on an admission of the same kind frozen beforehand (not timed):
          the pipeline without the runner's own steps

It prints min / median / max milliseconds per variant and the median of the per-round
differences, which is the overhead per action.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = "cat src/f0.txt > out/copy.txt; echo hello"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    parser.add_argument("--toolchain", help="the runner's toolchain (default: a one-file tree)")
    parser.add_argument("--census-ms", type=int, default=100,
                        help="limits.census_interval_ms of both admissions (default 100)")
    parser.add_argument("--short", action="store_true", help="2 rounds: a smoke test for CI")
    args = parser.parse_args()
    if args.short:
        args.rounds = 2
    build = os.path.abspath(args.build)
    sys.path[:0] = [os.path.join(build, "tests/remote/py"), os.path.join(HERE, "../tests/remote")]
    os.environ["SEALRUN_BINARY"] = os.path.join(build, "sealrun")
    import reapi_harness  # noqa: E402  (needs the paths above)

    files = {f"src/f{i}.txt": ("x" * 1023 + "\n") for i in range(args.files)}
    with tempfile.TemporaryDirectory(prefix="sealrun-runner-bench-") as tmp:
        runner = reapi_harness.Runner(tmp, concurrency=1, toolchain=args.toolchain,
                                      sets=[f"limits.census_interval_ms={args.census_ms}"])
        try:
            times = {"direct": [], "runner": [], "run": []}
            for i in range(args.rounds + 1):  # round 0 is a warm-up, not counted
                fields = runner.action(f"d{i}", files, dirs=("out",))
                t = time.monotonic()
                with open(runner.path(fields["stdout_path"]), "wb") as out, \
                        open(runner.path(fields["stderr_path"]), "wb") as err:
                    rc = subprocess.run(["/bin/sh", "-c", SCRIPT],
                                        cwd=runner.path(fields["input_root_directory"]),
                                        env={"PATH": "/usr/bin:/bin"}, stdout=out,
                                        stderr=err).returncode
                direct = time.monotonic() - t
                assert rc == 0

                t = time.monotonic()
                response = runner.run(f"r{i}", SCRIPT, files=files, dirs=("out",))
                via_runner = time.monotonic() - t
                assert response.exit_code == 0, runner.log_text()

                adm = frozen_admission(runner, f"p{i}", files, args.census_ms)
                t = time.monotonic()
                rc = subprocess.run([os.environ["SEALRUN_BINARY"], "run", adm[0], "--sha256",
                                     adm[1], "--id", f"bench-{i}", "--state-dir",
                                     os.path.join(tmp, "cli-state")],
                                    capture_output=True).returncode
                via_run = time.monotonic() - t
                assert rc == 0, f"sealrun run exited {rc}"
                if i > 0:
                    times["direct"].append(direct * 1000)
                    times["runner"].append(via_runner * 1000)
                    times["run"].append(via_run * 1000)
        finally:
            runner.stop()
    print(f"{args.rounds} rounds, {args.files} input files, toolchain "
          f"{args.toolchain or 'of one file'}, script: {SCRIPT}")
    print(f"{'variant':<8} {'min':>8} {'median':>8} {'max':>8}  (ms)")
    for name, values in times.items():
        print(f"{name:<8} {min(values):8.1f} {statistics.median(values):8.1f} {max(values):8.1f}")
    for a, b in (("runner", "direct"), ("runner", "run"), ("run", "direct")):
        diffs = [x - y for x, y in zip(times[a], times[b])]
        print(f"{a} - {b}: median {statistics.median(diffs):.1f} ms per action")


def frozen_admission(runner, name, files, census_ms):
    """An admission like the runner's for a fresh action directory: (path, sha256). Like the
    runner's, it pins the actions' /bin (the harness's static busybox tree): a job sees no host
    path that is not pinned, so without it `/bin/sh` is not there."""
    fields = runner.action(name, files, dirs=("out",))
    root = runner.path(fields["input_root_directory"])
    out = runner.path(name + "/admission.json")
    result = subprocess.run(
        [os.environ["SEALRUN_BINARY"], "admit", "freeze", "--out", out, "--set", "source.kind=tree",
         "--set", "source.path=" + root, "--toolchain", runner.toolchain, "--toolchain-mount",
         "/opt/toolchain", "--tree", runner.bin + "=/bin",
         "--env", "PATH=/usr/bin:/bin", "--env", "TMPDIR=/tmp",
         "--set", "mounts.source_writable=true", "--set", "mounts.outputs_from=source",
         "--set", f"limits.census_interval_ms={census_ms}", "--", "/bin/sh", "-c", SCRIPT],
        capture_output=True, text=True, check=True)
    return out, result.stdout.split()[0]


if __name__ == "__main__":
    main()
