#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Plays bb_worker against a real `sealrun runner` over a unix socket (ctest -L reapi).

Each test starts its own runner (build/sealrun) with a build directory laid out as bb_worker lays
it out (<action>/root, <action>/tmp, <action>/server_logs, <action>/stdout, <action>/stderr, all
directories mode 0777, inputs read-only), speaks buildbarn.runner.Runner to it through stubs
generated from the vendored .proto files, and checks what an action leaves: its exit code, its
outputs in the input root, its streams, the resource usage Anys, and a receipt in its server logs
that `sealrun receipt verify` accepts. Conditions are waited on with deadlines, never by sleeping
a fixed time. Needs root (the runner runs jobs as the job user) and python3-grpcio.
"""
import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
import unittest

import grpc
from google.protobuf import empty_pb2  # noqa: F401  (the stubs need it importable)
from pkg.proto.resourceusage import resourceusage_pb2
from pkg.proto.runner import runner_pb2, runner_pb2_grpc
from sealrun import receipt_reference_pb2

SEALRUN = os.environ.get("SEALRUN_BINARY", "build/sealrun")


def wait_for(condition, timeout_s, what):
    """Polls `condition` until it returns something truthy; fails the test after timeout_s."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.05)


def sha256_file(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def processes_with(marker, exact=False):
    """Pids of live (non-zombie) processes whose command line contains `marker` (is it: exact)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{name}/stat") as f:
                zombie = ") Z " in f.read()
        except OSError:
            continue
        if (cmdline.strip() == marker if exact else marker in cmdline) and not zombie:
            found.append(int(name))
    return found


def cgroups_of(run_id):
    """Resource-group directories left for `run_id` (named sealrun-<id>.<pid>.<start>)."""
    left = []
    for hierarchy in ("/sys/fs/cgroup/memory", "/sys/fs/cgroup/pids", "/sys/fs/cgroup/unified"):
        for dirpath, dirnames, _ in os.walk(hierarchy):
            left += [os.path.join(dirpath, d) for d in dirnames
                     if d.startswith(f"sealrun-{run_id}.")]
    return left


class Runner:
    """One `sealrun runner` with its own build and state directories under `root`."""

    def __init__(self, root, sets=(), concurrency=8, toolchain=None, env=None, trees=()):
        self.root = root
        self.build = os.path.join(root, "build")
        self.state = os.path.join(root, "state")
        self.toolchain = toolchain or os.path.join(root, "toolchain")
        self.socket = os.path.join(root, "runner.sock")
        os.makedirs(self.build)
        if not toolchain:  # a small one of our own
            os.makedirs(self.toolchain)
            with open(os.path.join(self.toolchain, "tool.txt"), "w") as f:
                f.write("a toolchain file\n")
        # The actions' /bin: a static busybox and its applet links, pinned with --tree (a job
        # sees no host path that is not pinned: docs/view.md).
        self.bin = os.path.join(root, "job-bin")
        os.makedirs(self.bin)
        shutil.copy("/bin/busybox", os.path.join(self.bin, "busybox"))
        applets = subprocess.run(["/bin/busybox", "--list"], capture_output=True, text=True,
                                 check=True).stdout.split()
        for applet in applets:
            if applet != "busybox":
                os.symlink("busybox", os.path.join(self.bin, applet))
        self.log_path = os.path.join(root, "runner.log")
        self.log = open(self.log_path, "wb")
        argv = [SEALRUN, "runner", "--listen", "unix:" + self.socket, "--build-dir", self.build,
                "--state-dir", self.state, "--toolchain", self.toolchain + "=/opt/toolchain",
                "--tree", self.bin + "=/bin",
                *[arg for tree in trees for arg in ("--tree", tree)],
                "--concurrency", str(concurrency), "--set", "limits.census_interval_ms=200"]
        for s in sets:
            argv += ["--set", s]
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=self.log, env=env)
        wait_for(lambda: os.path.exists(self.socket) or self.proc.poll() is not None, 120,
                 "the runner's socket")
        if self.proc.poll() is not None:
            raise AssertionError("the runner exited at start: " + self.log_text())
        self.channel = grpc.insecure_channel("unix:" + self.socket)
        grpc.channel_ready_future(self.channel).result(timeout=60)
        self.stub = runner_pb2_grpc.RunnerStub(self.channel)

    def log_text(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def stop(self):
        self.channel.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=120)
        self.log.close()

    def action(self, name, files=None, dirs=()):
        """Lays out one action's directories as bb_worker does; returns the RunRequest paths."""
        base = os.path.join(self.build, name)
        for d in ("", "root", "tmp", "server_logs") + tuple("root/" + x for x in dirs):
            os.makedirs(os.path.join(base, d), exist_ok=True)
            os.chmod(os.path.join(base, d), 0o777)
        for rel, content in (files or {}).items():
            path = os.path.join(base, "root", rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            os.chmod(os.path.dirname(path), 0o777)
            with open(path, "w") as f:
                f.write(content)
            os.chmod(path, 0o444)  # inputs are read-only, as bb_worker's are
        return dict(input_root_directory=f"{name}/root", temporary_directory=f"{name}/tmp",
                    server_logs_directory=f"{name}/server_logs", stdout_path=f"{name}/stdout",
                    stderr_path=f"{name}/stderr")

    def path(self, rel):
        return os.path.join(self.build, rel)

    def run(self, name, script, files=None, dirs=(), env=None, timeout=120, **overrides):
        fields = self.action(name, files, dirs)
        fields.update(overrides)
        request = runner_pb2.RunRequest(
            arguments=["/bin/sh", "-c", script],
            environment_variables=env if env is not None else {"PATH": "/usr/bin:/bin"},
            **fields)
        return self.stub.Run(request, timeout=timeout)

    def server_logs(self, name):
        return os.path.join(self.build, name, "server_logs")

    def receipt(self, name):
        with open(os.path.join(self.server_logs(name), "receipt.json")) as f:
            return json.load(f)

    def verify(self, receipt_path):
        return subprocess.run([SEALRUN, "receipt", "verify", receipt_path], capture_output=True,
                              text=True)

    def sweep(self):
        return subprocess.run([SEALRUN, "sweep", "--state-dir", self.state, "--json"],
                              capture_output=True, text=True)


def unpack(response):
    """(POSIXResourceUsage, ReceiptReference) from a RunResponse's resource_usage."""
    usage = resourceusage_pb2.POSIXResourceUsage()
    reference = receipt_reference_pb2.ReceiptReference()
    found = set()
    for any_message in response.resource_usage:
        if any_message.Is(usage.DESCRIPTOR):
            any_message.Unpack(usage)
            found.add("usage")
        elif any_message.Is(reference.DESCRIPTOR):
            any_message.Unpack(reference)
            found.add("reference")
    assert found == {"usage", "reference"}, f"resource_usage holds {found}"
    return usage, reference


def python_usr():
    """A /usr holding only python3 and what it loads (tests/fixtures/python_usr.sh), for actions
    that run python3: the host's /usr is not in a job's view."""
    fixtures = os.path.join(os.path.dirname(os.path.abspath(SEALRUN)), "fixtures")
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures",
                          "python_usr.sh")
    subprocess.run(["/bin/bash", script, fixtures], check=True, capture_output=True)
    return os.path.join(fixtures, "python-usr") + "=/usr"


class RunnerTestCase(unittest.TestCase):
    runner_sets = ()
    runner_trees = ()

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="sealrun-reapi-")
        self.runner = Runner(self.tmp.name, sets=self.runner_sets,
                             trees=[t() for t in self.runner_trees])

    def tearDown(self):
        self.runner.stop()
        self.tmp.cleanup()

    def read(self, rel):
        with open(self.runner.path(rel), errors="replace") as f:
            return f.read()

    def start_long_action(self, name, marker):
        """Starts `exec MARKER` as action `name`; returns its future once the job runs."""
        fields = self.runner.action(name)
        request = runner_pb2.RunRequest(
            arguments=["/bin/sh", "-c", "exec " + marker],
            environment_variables={"PATH": "/usr/bin:/bin"}, **fields)
        future = self.runner.stub.Run.future(request, timeout=600)
        # The job writes only its private copy of the input root until it ends, so its start is
        # seen as its process: `sh -c "exec MARKER"` become MARKER.
        wait_for(lambda: processes_with(marker, exact=True), 120, "the job to start")
        return future

    def assert_verifies(self, name):
        v = self.runner.verify(os.path.join(self.runner.server_logs(name), "receipt.json"))
        self.assertEqual(v.returncode, 0, v.stdout + v.stderr)


class Readiness(RunnerTestCase):
    def test_check_readiness(self):
        os.mkdir(self.runner.path("check_readiness"))
        self.runner.stub.CheckReadiness(runner_pb2.CheckReadinessRequest(path="check_readiness"))
        for path, code in (("missing", grpc.StatusCode.NOT_FOUND),
                           ("../etc", grpc.StatusCode.INVALID_ARGUMENT),
                           ("/etc", grpc.StatusCode.INVALID_ARGUMENT),
                           ("", grpc.StatusCode.INVALID_ARGUMENT)):
            with self.assertRaises(grpc.RpcError) as e:
                self.runner.stub.CheckReadiness(runner_pb2.CheckReadinessRequest(path=path))
            self.assertEqual(e.exception.code(), code, path)


class Actions(RunnerTestCase):
    def test_successful_action(self):
        script = ("cat src/input.txt > out/copy.txt; echo made > new.txt; "
                  "echo hello-stdout; echo to-stderr >&2; echo $TMPDIR $SOURCE_DATE_EPOCH > env.txt")
        response = self.runner.run("ok", script, files={"src/input.txt": "input\n"}, dirs=("out",),
                                   env={"PATH": "/usr/bin:/bin", "SOURCE_DATE_EPOCH": "1700000000"})
        self.assertEqual(response.exit_code, 0, self.runner.log_text())
        # Outputs land in the input root, where bb_worker collects them, and are its to remove.
        self.assertEqual(self.read("ok/root/out/copy.txt"), "input\n")
        self.assertEqual(self.read("ok/root/new.txt"), "made\n")
        self.assertEqual(self.read("ok/root/env.txt"), "/tmp 1700000000\n")
        root_owner = os.stat(self.runner.path("ok/root")).st_uid
        for rel in ("ok/root/new.txt", "ok/root/out/copy.txt", "ok/root/out"):
            self.assertEqual(os.stat(self.runner.path(rel)).st_uid, root_owner, rel)
        self.assertEqual(self.read("ok/stdout"), "hello-stdout\n")
        self.assertEqual(self.read("ok/stderr"), "to-stderr\n")

        usage, reference = unpack(response)
        self.assertGreater(usage.maximum_resident_set_size, 0)
        self.assertGreater(usage.user_time.ToNanoseconds() + usage.system_time.ToNanoseconds(), 0)
        self.assertEqual(usage.termination_signal, "")
        logs = self.runner.server_logs("ok")
        self.assertEqual(reference.receipt_sha256, sha256_file(os.path.join(logs, "receipt.json")))
        self.assertEqual(reference.state, "built")
        self.assertEqual(reference.sealrun_exit, 0)
        receipt = self.runner.receipt("ok")
        self.assertEqual(receipt["id"], reference.run_id)
        self.assertEqual(receipt["state"], "built")
        self.assertTrue(receipt["stop_confirmed"])
        self.assertEqual([o["path"] for o in receipt["outputs"]],
                         ["env.txt", "new.txt", "out/copy.txt"])
        self.assert_verifies("ok")
        # The admission pins the input root as it was before the action, and nothing else of it.
        admission_path = os.path.join(logs, "admission.json")
        self.assertEqual(sha256_file(admission_path), receipt["admission_sha256"])
        self.assertEqual(reference.admission_sha256, receipt["admission_sha256"])
        with open(admission_path) as f:
            admission = json.load(f)
        self.assertEqual([e["path"] for e in admission["source"]["manifest"]], ["src/input.txt"])
        self.assertEqual(reference.input_manifest_sha256, admission["source"]["manifest_sha256"])
        self.assertTrue(admission["mounts"]["source_writable"])
        self.assertEqual(admission["command"]["cwd"], "/src")
        self.assertEqual(admission["toolchain"]["mount_path"], "/opt/toolchain")
        # The runner's own copy of the receipt is the same bytes.
        kept = os.path.join(self.runner.state, "results", reference.run_id, "receipt.json")
        self.assertEqual(sha256_file(kept), reference.receipt_sha256)

    def test_working_directory_and_relative_program(self):
        files = {"pkg/tool.sh": "#!/bin/sh\necho tool ran in $(pwd) > result.txt\n"}
        fields = self.runner.action("wd", files=files)
        os.chmod(self.runner.path("wd/root/pkg/tool.sh"), 0o555)
        response = self.runner.stub.Run(runner_pb2.RunRequest(
            arguments=["./tool.sh"], environment_variables={"PATH": "/usr/bin:/bin"},
            working_directory="pkg", **fields), timeout=120)
        self.assertEqual(response.exit_code, 0, self.read("wd/stderr"))
        self.assertEqual(self.read("wd/root/pkg/result.txt"), "tool ran in /src/pkg\n")

    def test_failing_action(self):
        response = self.runner.run("fail", "echo failing >&2; exit 3")
        self.assertEqual(response.exit_code, 3)
        usage, reference = unpack(response)
        self.assertEqual(reference.state, "failed")
        self.assertEqual(reference.sealrun_exit, 5)
        stderr = self.read("fail/stderr")
        self.assertTrue(stderr.startswith("failing\n"), stderr)
        self.assertIn("sealrun runner: run " + reference.run_id + " failed", stderr)
        receipt = self.runner.receipt("fail")
        self.assertEqual(receipt["commands"][0]["exit"], 3)
        self.assertTrue(receipt["stop_confirmed"])
        self.assert_verifies("fail")

    def test_input_root_that_cannot_be_pinned_is_refused(self):
        fields = self.runner.action("link", files={"a.txt": "a\n"})
        os.symlink("/etc/passwd", self.runner.path("link/root/passwd"))
        with self.assertRaises(grpc.RpcError) as e:
            self.runner.stub.Run(runner_pb2.RunRequest(arguments=["true"], **fields), timeout=60)
        self.assertEqual(e.exception.code(), grpc.StatusCode.FAILED_PRECONDITION)
        self.assertIn("passwd", e.exception.details())
        self.assertEqual(os.listdir(self.runner.server_logs("link")), [])

    def test_a_toolchain_changed_after_start_is_refused(self):
        with open(os.path.join(self.runner.toolchain, "tool.txt"), "a") as f:
            f.write("drifted\n")
        with self.assertRaises(grpc.RpcError) as e:
            self.runner.run("drift", "touch ran")
        self.assertEqual(e.exception.code(), grpc.StatusCode.FAILED_PRECONDITION)
        self.assertIn("toolchain.tree_sha256", e.exception.details())
        self.assertFalse(os.path.exists(self.runner.path("drift/root/ran")))
        receipt = self.runner.receipt("drift")  # a refusal is receipted too
        self.assertEqual(receipt["state"], "not_run")
        self.assertEqual(receipt["exit"], 3)
        self.assert_verifies("drift")

    def test_deadline_cancels_a_long_action(self):
        marker = "sleep 6001"
        future = self.start_long_action("long", marker)
        future.cancel()  # as bb_worker's context is cancelled at the action's timeout
        with self.assertRaises(grpc.FutureCancelledError):
            future.result()
        # The runner answers a cancelled call only after its run stopped the job and wrote the
        # receipt; the receipt lands in the server logs as for any action.
        receipt_path = os.path.join(self.runner.server_logs("long"), "receipt.json")
        wait_for(lambda: os.path.exists(receipt_path), 120, "the cancelled action's receipt")
        receipt = self.runner.receipt("long")
        self.assertEqual(receipt["state"], "failed")
        self.assertTrue(receipt["stop_confirmed"])
        self.assertIn("SIGTERM", receipt["reason"])
        self.assertEqual(processes_with(marker), [])
        self.assertEqual(cgroups_of(receipt["id"]), [])
        self.assertFalse(os.path.exists(os.path.join(self.runner.state, "owned", receipt["id"])))
        sweep = self.runner.sweep()
        self.assertEqual(sweep.returncode, 0, sweep.stdout + sweep.stderr)
        self.assert_verifies("long")

    def test_deadline_exceeded(self):
        """A gRPC deadline (not an explicit cancel) stops the action the same way."""
        marker = "sleep 6003"
        with self.assertRaises(grpc.RpcError) as e:
            self.runner.run("deadline", "exec " + marker, timeout=4)
        self.assertEqual(e.exception.code(), grpc.StatusCode.DEADLINE_EXCEEDED)
        receipt_path = os.path.join(self.runner.server_logs("deadline"), "receipt.json")
        wait_for(lambda: os.path.exists(receipt_path), 120, "the receipt")
        receipt = self.runner.receipt("deadline")
        self.assertTrue(receipt["stop_confirmed"])
        wait_for(lambda: not processes_with(marker), 10, "no job process")
        self.assertEqual(cgroups_of(receipt["id"]), [])

    def test_eight_concurrent_actions(self):
        results = {}

        def one(i):
            try:
                results[i] = self.runner.run(
                    f"par{i}", f"echo {i} > out.txt; sleep 1; echo done-{i}")
            except grpc.RpcError as e:  # recorded, then reported by the assertions below
                results[i] = e

        threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=600)
        ids = set()
        spans = []
        for i in range(8):
            response = results.get(i)
            self.assertIsInstance(response, runner_pb2.RunResponse, repr(response))
            self.assertEqual(response.exit_code, 0)
            self.assertEqual(self.read(f"par{i}/root/out.txt"), f"{i}\n")
            self.assertEqual(self.read(f"par{i}/stdout"), f"done-{i}\n")
            _, reference = unpack(response)
            ids.add(reference.run_id)
            self.assert_verifies(f"par{i}")
            job = self.runner.receipt(f"par{i}")["commands"][0]
            spans.append((job["started"], job["finished"]))
        self.assertEqual(len(ids), 8)
        # They really ran at the same time: some job started before another one finished.
        spans.sort()
        self.assertTrue(any(spans[k + 1][0] < spans[k][1] for k in range(7)), spans)

    def test_one_input_root_serves_one_action_at_a_time(self):
        future = self.start_long_action("busy", "sleep 6006")
        # The same input root, from the same action directory (a request's paths may not leave it).
        fields = dict(self.runner.action("busy2"), stdout_path="busy/stdout2",
                      stderr_path="busy/stderr2", temporary_directory="busy/tmp",
                      server_logs_directory="busy/server_logs", input_root_directory="busy/root")
        with self.assertRaises(grpc.RpcError) as e:
            self.runner.stub.Run(runner_pb2.RunRequest(arguments=["true"], **fields), timeout=60)
        self.assertEqual(e.exception.code(), grpc.StatusCode.FAILED_PRECONDITION)
        self.assertIn("in use by another action", e.exception.details())
        for stream in ("stdout2", "stderr2"):  # refused before anything was created
            self.assertFalse(os.path.exists(self.runner.path("busy/" + stream)))
        # An action whose directory lies inside the running one's input root: refused before its
        # log files are created there.
        inner = "busy/root/inner"
        os.makedirs(self.runner.path(inner))
        with self.assertRaises(grpc.RpcError) as e:
            self.runner.stub.Run(runner_pb2.RunRequest(
                arguments=["true"], input_root_directory=inner + "/root",
                stdout_path=inner + "/stdout", stderr_path=inner + "/stderr",
                temporary_directory=inner + "/tmp", server_logs_directory=inner + "/server_logs"),
                timeout=60)
        self.assertEqual(e.exception.code(), grpc.StatusCode.FAILED_PRECONDITION)
        self.assertEqual(os.listdir(self.runner.path(inner)), [])
        # Another action's paths cannot reach into the running one's input root at all.
        with self.assertRaises(grpc.RpcError) as e:
            self.runner.stub.Run(runner_pb2.RunRequest(
                arguments=["true"], **dict(self.runner.action("busy3"),
                                           stdout_path="busy/root/planted")), timeout=60)
        self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertFalse(os.path.exists(self.runner.path("busy/root/planted")))
        future.cancel()
        wait_for(lambda: os.path.exists(os.path.join(self.runner.server_logs("busy"),
                                                     "receipt.json")), 120, "the receipt")
        # Free again once the first action has answered.
        wait_for(lambda: self._runs_in("busy/root"), 60, "the input root to be free")

    def _runs_in(self, root):
        # The request's other paths in the root's own action directory, as a request must have them.
        # Server logs of its own: the first action's receipt is in <parent>/server_logs.
        parent = os.path.dirname(root)
        logs = self.runner.path(parent + "/again.server_logs")
        shutil.rmtree(logs, ignore_errors=True)
        os.makedirs(logs)
        os.chmod(logs, 0o777)
        fields = dict(self.runner.action("again"), stdout_path=parent + "/again.stdout",
                      stderr_path=parent + "/again.stderr", temporary_directory=parent + "/tmp",
                      server_logs_directory=parent + "/again.server_logs")
        for stream in ("again.stdout", "again.stderr"):
            path = self.runner.path(parent + "/" + stream)
            if os.path.exists(path):
                os.unlink(path)
        try:
            response = self.runner.stub.Run(runner_pb2.RunRequest(
                arguments=["true"], **dict(fields, input_root_directory=root)), timeout=60)
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.FAILED_PRECONDITION:
                raise
            return False
        return response.exit_code == 0

    def test_hostile_requests_are_refused_and_the_runner_survives(self):
        fields = self.runner.action("h")
        os.symlink("/", self.runner.path("escape"))
        os.symlink("/tmp/sealrun-reapi-planted", self.runner.path("h/planted"))
        invalid = grpc.StatusCode.INVALID_ARGUMENT
        cases = [
            ("absolute input root", dict(input_root_directory="/etc"), invalid),
            ("escaping input root", dict(input_root_directory="../x"), invalid),
            ("escaping via inner ..", dict(input_root_directory="h/../../x"), invalid),
            ("missing input root", dict(input_root_directory="nope/root"), invalid),
            ("input root through a symlink", dict(input_root_directory="escape/etc"), invalid),
            ("no arguments", dict(arguments=[]), invalid),
            ("NUL in an argument", dict(arguments=["/bin/sh", "a\0b"]), invalid),
            ("5000 arguments", dict(arguments=["x"] * 5000), invalid),
            ("a 300 KiB argument", dict(arguments=["x" * 300 * 1024]), invalid),
            ("bad variable name", dict(environment_variables={"A=B": "x"}), invalid),
            ("NUL in a variable", dict(environment_variables={"A": "x\0y"}), invalid),
            ("bad SOURCE_DATE_EPOCH", dict(environment_variables={"SOURCE_DATE_EPOCH": "soon"}),
             invalid),
            ("escaping working directory", dict(working_directory="../.."), invalid),
            ("missing working directory", dict(working_directory="nope"), invalid),
            ("stdout through a symlink", dict(stdout_path="escape/tmp/sealrun-reapi-pwned"),
             invalid),
            ("stdout onto a planted symlink", dict(stdout_path="h/planted"), invalid),
            ("absolute stderr", dict(stderr_path="/tmp/sealrun-reapi-pwned"), invalid),
            ("missing server logs", dict(server_logs_directory="h/none"), invalid),
            ("a 5 MiB request", dict(arguments=["x" * (5 << 20)]),
             grpc.StatusCode.RESOURCE_EXHAUSTED),
        ]
        for name, change, code in cases:
            request = dict(fields, arguments=["/bin/sh", "-c", "touch ran"],
                           environment_variables={"PATH": "/usr/bin:/bin"})
            request.update(change)
            with self.assertRaises(grpc.RpcError, msg=name) as e:
                self.runner.stub.Run(runner_pb2.RunRequest(**request), timeout=60)
            self.assertEqual(e.exception.code(), code, f"{name}: {e.exception.details()}")
            self.assertFalse(os.path.exists(self.runner.path("h/root/ran")), name)
            self.assertFalse(os.path.exists("/tmp/sealrun-reapi-pwned"), name)
            self.assertFalse(os.path.exists("/tmp/sealrun-reapi-planted"), name)
            for stream in ("stdout", "stderr"):  # refused before anything was created
                path = self.runner.path("h/" + stream)
                if os.path.exists(path):
                    os.unlink(path)
        self.assertIsNone(self.runner.proc.poll(), "the runner died")
        os.mkdir(self.runner.path("ready"))
        self.runner.stub.CheckReadiness(runner_pb2.CheckReadinessRequest(path="ready"))
        self.assertEqual(self.runner.run("after", "echo still-serving").exit_code, 0)
        self.assertEqual(self.read("after/stdout"), "still-serving\n")


class OutOfMemory(RunnerTestCase):
    runner_sets = ("limits.memory_max_bytes=67108864", "limits.memory_high_bytes=67108864")
    runner_trees = (python_usr,)

    def test_oom_action(self):
        script = "exec python3 -c \"x = b'x' * (512 << 20)\""
        response = self.runner.run("oom", script)
        self.assertEqual(response.exit_code, -1, self.read("oom/stderr"))
        usage, reference = unpack(response)
        self.assertEqual(usage.termination_signal, "KILL")
        self.assertEqual(reference.state, "failed")
        receipt = self.runner.receipt("oom")
        self.assertGreaterEqual(receipt["memory"]["events"]["oom_kill"], 1)
        self.assertIn("out of memory", receipt["reason"])
        self.assertIn("out of memory", self.read("oom/stderr"))
        self.assertTrue(receipt["stop_confirmed"])
        self.assert_verifies("oom")


class GrowthGuard(RunnerTestCase):
    runner_sets = ("limits.result_max_bytes=1048576",)  # 1 MiB of outputs per action

    def test_outputs_in_the_input_root_are_guarded_and_inputs_are_not(self):
        files = {"big-input.txt": "x" * (3 << 20)}  # 3 MiB of inputs: over the allowance alone
        small = self.runner.run("small", "head -c 100000 /dev/zero > out.bin", files=files)
        self.assertEqual(small.exit_code, 0, self.read("small/stderr"))
        big = self.runner.run("big", "head -c 5000000 /dev/zero > out.bin; exec sleep 6004",
                              files=files)
        self.assertEqual(big.exit_code, -1, self.read("big/stderr"))
        usage, reference = unpack(big)
        self.assertIn(usage.termination_signal, ("TERM", "KILL"))
        self.assertEqual(reference.sealrun_exit, 6)
        receipt = self.runner.receipt("big")
        self.assertEqual(receipt["guard"]["name"], "result_max_bytes")
        self.assertGreater(receipt["guard"]["limit"], (1 << 20) + (3 << 20))
        self.assertIn("growth guard", self.read("big/stderr"))
        self.assertTrue(receipt["stop_confirmed"])
        self.assertEqual(processes_with("sleep 6004"), [])


class ResultSpaceBound(RunnerTestCase):
    """ACCEPTANCE 40 through the runner: the writable /src is a file system of the run's own."""
    runner_sets = ("limits.result_max_bytes=67108864", "limits.result_max_inodes=10000")

    def test_fallocate_and_many_files_end_in_enospc_within_the_bound(self):
        script = ("fallocate -l 4G big; echo fallocate-exit=$? >&2; rm -f big; i=0; "
                  "while [ $i -lt 400000 ] && true 2>/dev/null >f$i; do i=$((i+1)); done; "
                  "echo made=$i >&2")
        response = self.runner.run("flood", script, files={"input.txt": "an input\n"},
                                   timeout=600)
        stderr = self.read("flood/stderr")
        self.assertEqual(response.exit_code, 0, stderr)
        self.assertIn("No space left on device", stderr)
        self.assertNotIn("fallocate-exit=0", stderr)
        made = int(stderr.split("made=")[1].split()[0])
        self.assertLess(made, 10000, stderr)
        self.assertGreater(made, 9000, stderr)
        receipt = self.runner.receipt("flood")
        self.assertEqual(receipt["result_space"]["kind"], "filesystem", receipt["result_space"])
        self.assertIn("result_space", receipt["limits_hit"])
        # The host never held more than the bound (64 MiB of outputs plus the tiny input).
        for sample in receipt["samples"]:
            self.assertLessEqual(sample["result_bytes"], 65 << 20, sample)
        # Nothing of the result space is left in the state directory.
        for sub in ("owned", "ownedfs", "exports"):
            left = [n for n in os.listdir(os.path.join(self.runner.state, sub))
                    if "+out" in n or sub == "exports"] \
                if os.path.isdir(os.path.join(self.runner.state, sub)) else []
            self.assertEqual(left, [], sub)


class NoContainment(unittest.TestCase):
    """A host where bubblewrap cannot be found: not ready, and nothing runs."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="sealrun-reapi-")
        # What the pipeline needs besides bwrap, and no bwrap.
        bin_dir = os.path.join(self.tmp.name, "bin")
        os.makedirs(bin_dir)
        for tool in ("sh", "unshare", "setpriv", "mount", "true"):
            for d in ("/usr/bin", "/bin"):
                if os.path.exists(os.path.join(d, tool)):
                    os.symlink(os.path.join(d, tool), os.path.join(bin_dir, tool))
                    break
        self.runner = Runner(self.tmp.name, env=dict(os.environ, PATH=bin_dir))

    def tearDown(self):
        self.runner.stop()
        self.tmp.cleanup()

    def test_not_ready_and_actions_are_unavailable(self):
        os.mkdir(self.runner.path("check_readiness"))
        with self.assertRaises(grpc.RpcError) as e:
            self.runner.stub.CheckReadiness(
                runner_pb2.CheckReadinessRequest(path="check_readiness"))
        self.assertEqual(e.exception.code(), grpc.StatusCode.UNAVAILABLE)
        self.assertIn("bubblewrap", e.exception.details())
        with self.assertRaises(grpc.RpcError) as e:
            self.runner.run("nobwrap", "touch ran")
        self.assertEqual(e.exception.code(), grpc.StatusCode.UNAVAILABLE, e.exception.details())
        self.assertFalse(os.path.exists(self.runner.path("nobwrap/root/ran")))
        with open(os.path.join(self.runner.server_logs("nobwrap"), "receipt.json")) as f:
            receipt = json.load(f)
        self.assertEqual((receipt["state"], receipt["exit"]), ("not_run", 4))


class RunnerStopped(RunnerTestCase):
    def test_sigterm_stops_the_runs_in_flight_and_exits_0(self):
        marker = "sleep 6005"
        future = self.start_long_action("stopped", marker)
        self.runner.proc.send_signal(signal.SIGTERM)
        self.assertEqual(self.runner.proc.wait(timeout=120), 0, self.runner.log_text())
        with self.assertRaises(grpc.RpcError) as e:
            future.result()
        self.assertIn(e.exception.code(), (grpc.StatusCode.CANCELLED,
                                           grpc.StatusCode.UNAVAILABLE))
        # The runner exits only after the run in flight stopped its job and wrote its receipt.
        receipt = self.runner.receipt("stopped")
        self.assertTrue(receipt["stop_confirmed"])
        self.assertIn("SIGTERM", receipt["reason"])
        self.assertEqual(processes_with(marker), [])
        self.assertEqual(cgroups_of(receipt["id"]), [])


class RunnerKilled(RunnerTestCase):
    def test_runner_killed_mid_action_leaves_what_sweep_removes(self):
        marker = "sleep 6002"
        future = self.start_long_action("killed", marker)
        self.runner.proc.kill()
        self.runner.proc.wait()
        with self.assertRaises(grpc.RpcError):
            future.result()
        # Its `sealrun run` got SIGTERM as the runner died: it stops the job and writes the receipt.
        runs = os.listdir(os.path.join(self.runner.state, "runner"))
        self.assertEqual(len(runs), 1, runs)
        receipt_path = os.path.join(self.runner.state, "results", runs[0], "receipt.json")
        wait_for(lambda: os.path.exists(receipt_path), 120, "the orphaned run's receipt")
        with open(receipt_path) as f:
            receipt = json.load(f)
        self.assertTrue(receipt["stop_confirmed"])
        self.assertEqual(receipt["state"], "failed")
        wait_for(lambda: not processes_with(marker), 10, "no job process")
        self.assertEqual(cgroups_of(runs[0]), [])
        sweep = self.runner.sweep()
        self.assertEqual(sweep.returncode, 0, sweep.stdout + sweep.stderr)
        self.assertEqual(self.runner.verify(receipt_path).returncode, 0)


if __name__ == "__main__":
    unittest.main()
