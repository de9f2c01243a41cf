"""The sandbox: Landlock, namespaces, limits, identity, killing, the fork server and the reply boundary.

What is asserted depends only on what this machine offers: with root and a
Landlock ABI of 6 or more (this project's CI and development machines) every
layer is checked; elsewhere a test checks the fallback and its warning.
"""

from __future__ import annotations

import ast
import ctypes
import importlib.util
import io
import os
import pickle
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import warnings
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest

from conftest import PROJECT
from grader.sandbox.client import Limits, Sandbox, SandboxWarning, describe_isolation, start_server
from grader.sandbox.codec import BadReply, ForeignObject, decode_reply, load_checked_array
from grader.sandbox.link import ForkServer
from grader.sandbox.source import Cell, SubmissionSource
from grader.sandbox.worker import landlock
from grader.sandbox.worker.confinement import NOBODY, read_policy

ABI = landlock.abi_version()
ROOT = os.geteuid() == 0
FAST = Limits(call_timeout=1.0, submission_timeout=10.0, memory_mb=1024, cpu_seconds=10, max_processes=64,
              max_restarts=2)


def source(code: str) -> SubmissionSource:
    return SubmissionSource(cells=(Cell(textwrap.dedent(code), "/tmp/submission.py", "submission.py"),),
                            mode="module")


@pytest.fixture(scope="module")
def server():
    shared = start_server()
    yield shared
    shared.stop()


def run(code: str, function: str, *args, server=None, limits: Limits = FAST):
    with Sandbox.open(source=source(code), limits=limits, server=server) as box:
        assert box.load_report.ok, box.load_report.error
        return box.call(function, *args)


def processes_named(name: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if Path(f"/proc/{entry}/comm").read_text().strip() == name:
                    found.append(int(entry))
            except OSError:
                pass
    return found


def wait_until(condition, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


# ---- Landlock itself ----------------------------------------------------------------
def test_abi_version_is_what_the_kernel_says():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    raw = libc.syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1))  # LANDLOCK_CREATE_RULESET_VERSION
    assert ABI == max(raw, 0)


@pytest.mark.skipif(ABI < 1, reason="this kernel has no Landlock")
def test_restrict_self_denies_what_was_not_granted(tmp_path):
    allowed_dir = Path(np.__file__).parent
    writable = tmp_path / "scratch"
    writable.mkdir()
    (tmp_path / "secret.txt").write_text("secret")
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child confines itself and reports what it could do
        verdicts = []
        try:
            enforced = landlock.restrict_self(readable=[str(allowed_dir)], writable=[str(writable)])
            attempts = {
                "read granted": lambda: (allowed_dir / "__init__.py").read_bytes(),
                "read secret": lambda: (tmp_path / "secret.txt").read_text(),
                "list parent": lambda: os.listdir(tmp_path),
                "write scratch": lambda: (writable / "out.txt").write_text("ok"),
                "write outside": lambda: (tmp_path / "out.txt").write_text("no"),
                "tcp connect": lambda: socket.create_connection(("127.0.0.1", 9), timeout=0.5),
                "signal parent": lambda: os.kill(os.getppid(), 0),
            }
            for name, attempt in attempts.items():
                try:
                    attempt()
                    verdicts.append(f"{name}=allowed")
                except PermissionError:
                    verdicts.append(f"{name}=denied")
                except OSError as other:
                    verdicts.append(f"{name}={type(other).__name__}")
            verdicts.append(enforced.describe())
        finally:
            os.write(writer, ";".join(verdicts).encode())
            os._exit(0)
    os.close(writer)
    report = os.read(reader, 4096).decode().split(";")
    os.waitpid(pid, 0)
    assert {"read granted=allowed", "read secret=denied", "list parent=denied", "write scratch=allowed",
            "write outside=denied"} <= set(report)
    if ABI >= 4:
        assert "tcp connect=denied" in report
    if ABI >= 6:
        assert "signal parent=denied" in report
        assert report[-1] == f"landlock ABI {ABI} (fs, net, signals)"


def test_read_policy_grants_interpreter_and_numpy_but_not_site_packages_or_project():
    import sysconfig

    numpy_dir = os.path.realpath(os.path.dirname(np.__file__))
    policy = read_policy(numpy_dir, hidden=[str(PROJECT)], packages=["scipy", "grader", "../etc"])
    site = os.path.realpath(sysconfig.get_paths()["purelib"])
    assert numpy_dir in policy.readable
    assert any(path.endswith("lib-dynload") for path in policy.readable)
    for path in policy.readable:
        assert not (site + "/").startswith(path.rstrip("/") + "/"), f"{path} would expose all of site-packages"
        if path.startswith(site + "/"):
            assert os.path.basename(path) in ("numpy", "numpy.libs", "scipy", "scipy.libs"), path
        # nothing of the project, unless the environment itself lives inside the clone (a .venv there)
        inside_environment = path.startswith(os.path.realpath(sys.prefix) + "/") or path.startswith(numpy_dir)
        assert not path.startswith(str(PROJECT)) or inside_environment, path


def test_modules_the_fork_server_loads_need_only_the_standard_library():
    folder = PROJECT / "grader" / "sandbox" / "worker"
    for path in sorted(folder.glob("*.py")):
        name = path.stem
        tree = ast.parse(path.read_text())
        top_level = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
        modules = {alias.name.split(".")[0] for node in top_level if isinstance(node, ast.Import) for alias in node.names}
        modules |= {node.module.split(".")[0] for node in top_level if isinstance(node, ast.ImportFrom) and node.module}
        assert modules <= set(sys.stdlib_module_names) | {"__future__"}, (name, modules)


# ---- the confined worker --------------------------------------------------------------
PROBE = """
import os, resource, sys

def probe(paths):
    seen = {}
    for path in paths:
        try:
            if os.path.isdir(path):
                os.listdir(path)
            else:
                open(path, "rb").read(1)
            seen[path] = "read"
        except OSError as refused:
            seen[path] = type(refused).__name__
    try:
        import grader
        seen["import grader"] = "imported"
    except ImportError as missing:
        seen["import grader"] = type(missing).__name__
    import decimal, json, numpy.linalg  # the standard library and NumPy stay importable
    limits = {name: resource.getrlimit(getattr(resource, name))[0]
              for name in ("RLIMIT_AS", "RLIMIT_CPU", "RLIMIT_NPROC", "RLIMIT_FSIZE", "RLIMIT_NOFILE")}
    return repr({"seen": seen, "limits": limits, "uid": os.getuid(), "cwd": os.getcwd(),
                 "environment": sorted(os.environ), "home": os.environ.get("HOME"), "sid": os.getsid(0) == os.getpid()})
"""


def test_worker_reads_only_the_interpreter_and_numpy(server, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.json").write_text("[]")
    secrets = [PROJECT / "solutions" / "multihead_attention.py", PROJECT / "grader" / "assignments",
               PROJECT / "grader" / "sandbox.py", PROJECT, Path(os.environ["MHA_CONFIG_DIR"]), out / "results.json",
               Path("/etc/passwd")]
    outcome = run(PROBE, "probe", [str(path) for path in secrets], server=server)
    report = ast.literal_eval(outcome.value)
    assert report["seen"]["import grader"] == "ModuleNotFoundError"
    if ABI >= 1:
        assert all(verdict != "read" for verdict in report["seen"].values()), report["seen"]
    else:
        pytest.skip("no Landlock: only the mount namespace hides the project here")


def test_worker_runs_under_its_limits_in_its_scratch_folder(server):
    limits = Limits(memory_mb=900, cpu_seconds=7, max_processes=33, file_size_mb=3, open_files=48)
    with Sandbox.open(source=source(PROBE), limits=limits, server=server) as box:
        report = ast.literal_eval(box.call("probe", []).value)
        scratch = box.worker_folder  # the host's own folder (box.scratch) when no tree of its own is in force
    assert report["limits"] == {"RLIMIT_AS": 900 << 20, "RLIMIT_CPU": 7, "RLIMIT_NPROC": 33,
                                "RLIMIT_FSIZE": 3 << 20, "RLIMIT_NOFILE": 48}
    assert report["cwd"] == scratch and report["home"] == scratch
    assert Path(scratch).parent == Path(tempfile.gettempdir()).resolve() and Path(scratch).name.startswith("mha-worker-")
    assert set(report["environment"]) <= {"PATH", "HOME", "TMPDIR", "LANG", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                          "MKL_NUM_THREADS", "PYTHONHASHSEED", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"}
    assert "MHA_COURSE_KEY" not in report["environment"]
    assert report["sid"]
    assert report["uid"] == (NOBODY if ROOT else os.getuid())


def test_isolation_says_exactly_what_was_in_force(server):
    with Sandbox.open(source=source("x = 1"), limits=FAST, server=server) as box:
        isolation = box.isolation
    if ABI >= 6:
        assert isolation.startswith(f"landlock ABI {ABI} (fs, net, signals)")
    if ROOT:
        assert "pid/net/ipc/uts/mount namespaces" in isolation and "uid nobody" in isolation
        assert "read-only tree of its own (python from " in isolation and "scratch tmpfs of 64 MiB" in isolation
        assert f"numpy from {os.path.dirname(os.path.realpath(np.__file__))}" in isolation
        assert ("cgroup per worker" in isolation) != ("memory watchdog" in isolation)
    assert "rlimits" in isolation and "new session" in isolation and "scratch " in isolation
    if ABI >= 6 and ROOT:
        assert "WARNING" not in isolation


def test_describe_isolation_warns_once_about_what_is_missing():
    hello = {"landlock": "no landlock", "namespaces": [], "uid": 0, "session": True}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        text = describe_isolation(dict(hello, warnings=["made up for this test"]))
        describe_isolation(dict(hello, warnings=["made up for this test"]))
    assert text.startswith("no landlock")
    assert "WARNING: Landlock is not available" in text and "made up for this test" in text
    assert "process limits do not bind it" in text
    made_up = [w for w in caught if "made up for this test" in str(w.message)]
    assert len(made_up) == 1 and made_up[0].category is SandboxWarning


def test_worker_has_no_network(server):
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(0.3)
    port = listener.getsockname()[1]
    code = """
        import socket
        def reach(port):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1)
                return "connected"
            except OSError as refused:
                return type(refused).__name__
    """
    outcome = run(code, "reach", port, server=server)
    assert outcome.value != "connected"
    with pytest.raises(socket.timeout):
        listener.accept()
    listener.close()


def test_worker_cannot_signal_the_grader(server):
    code = """
        import os, signal
        def hit(pid):
            try:
                os.kill(pid, signal.SIGTERM)
                return "sent"
            except OSError as refused:
                return type(refused).__name__
    """
    assert run(code, "hit", os.getpid(), server=server).value in ("PermissionError", "ProcessLookupError")


# ---- killing everything a worker started ------------------------------------------------------
DAEMON = """
import ctypes, os, time
def start_daemon(name):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            ctypes.CDLL(None).prctl(15, name.encode(), 0, 0, 0)  # PR_SET_NAME
            while True:
                time.sleep(0.05)
        os._exit(0)
    os.wait()
    return "started"
"""


@pytest.mark.parametrize("without", [(), ("namespaces",)], ids=["namespaces", "subreaper"])
def test_a_daemonized_child_dies_with_the_worker(without):
    name = f"dmn{os.getpid() % 10000}{len(without)}"
    shared = start_server(without=without)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SandboxWarning)  # without a mount namespace some folders may be out of reach
            box = Sandbox.open(source=source(DAEMON), limits=FAST, server=shared)
        with box:
            assert box.call("start_daemon", name).value == "started"
            assert wait_until(lambda: processes_named(name)), "the daemon never ran"
            daemons = processes_named(name)
        shared.pool.settle()  # the worker's end, read later (on the next start, the server's stop or at exit)
        assert processes_named(name) == [], f"daemons {daemons} outlived the submission"
    finally:
        shared.stop()


def test_killing_the_grader_kills_its_workers(tmp_path):
    name = f"orph{os.getpid() % 10000}"
    script = tmp_path / "grade_then_die.py"
    script.write_text(textwrap.dedent(f"""
        import sys, time
        from grader.sandbox.client import Limits, Sandbox
        from grader.sandbox.source import Cell, SubmissionSource
        code = {DAEMON!r}
        box = Sandbox.open(source=SubmissionSource(cells=(Cell(code, "/tmp/d.py", "d"),), mode="module"))
        box.call("start_daemon", {name!r})
        print(box.worker.pid, box.scratch, flush=True)
        time.sleep(120)
    """))
    grader = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, cwd=PROJECT)
    worker, scratch = grader.stdout.readline().split()
    assert wait_until(lambda: processes_named(name))
    grader.kill()  # kill -9: no cleanup code runs in the grader
    grader.wait()
    assert wait_until(lambda: not processes_named(name)), "the daemon outlived a killed grader"
    assert wait_until(lambda: not Path(f"/proc/{worker}").exists() or
                      Path(f"/proc/{worker}/stat").read_text().split()[2] == "Z")
    assert wait_until(lambda: not Path(scratch).exists()), "the scratch folder of a killed grader stayed"


# ---- time limits -------------------------------------------------------------------
def test_a_call_that_overruns_is_killed_and_the_next_call_gets_a_fresh_worker(server):
    code = """
        import time
        def spin():
            while True:
                pass
        def answer():
            return 42
    """
    limits = Limits(call_timeout=0.5, max_restarts=2)
    with Sandbox.open(source=source(code), limits=limits, server=server) as box:
        started = time.monotonic()
        outcome = box.call("spin")
        assert outcome.timed_out and time.monotonic() - started < 3
        assert box.call("answer").value == 42
        box.call("spin")
        box.call("spin")
        assert "stopped too often" in box.call("answer").error.message


def test_the_submission_timeout_caps_all_calls_together(server):
    code = """
        import time
        def nap():
            time.sleep(0.4)
            return 1
    """
    limits = Limits(call_timeout=1.0, submission_timeout=1.0)
    with Sandbox.open(source=source(code), limits=limits, server=server) as box:
        started = time.monotonic()
        outcomes = [box.call("nap") for _ in range(5)]
    assert time.monotonic() - started < 3
    assert outcomes[0].value == 1 and outcomes[-1].timed_out


def test_a_worker_that_stops_reading_cannot_block_the_grader(server):
    stop_reading = (PROJECT / "tests" / "fixtures" / "hostile" / "stop_reading.py").read_text()
    limits = Limits(call_timeout=0.5, max_restarts=0)
    with Sandbox.open(source=source(stop_reading), limits=limits, server=server) as box:
        started = time.monotonic()
        outcome = box.call("softmax", np.zeros((512, 512)))  # 2 MiB: far more than the shrunk pipe holds
    assert outcome.timed_out
    assert time.monotonic() - started < 3


# ---- values across the boundary ---------------------------------------------------------
RETURNS = """
import numpy as np
class Sub(np.ndarray):
    def __eq__(self, other):
        return True
class Yes:
    def __eq__(self, other):
        return True
def subclass():
    return np.arange(3.0).view(Sub)
def masked():
    return np.ma.masked_array([1.0, 2.0], mask=[0, 1])
def objects():
    return np.array([1, "a"], dtype=object)
def yes():
    return Yes()
def strided():
    return np.arange(20.0).reshape(4, 5)[:, ::2].T
def huge():
    return np.lib.stride_tricks.as_strided(np.zeros(1), shape=(1 << 20, 1 << 20), strides=(0, 0))
def scalar():
    return np.float32(1.5)
def nested():
    return (np.ones(2), [np.zeros(1), 3])
"""


def test_only_plain_numeric_arrays_cross_back(server):
    with Sandbox.open(source=source(RETURNS), limits=FAST, server=server) as box:
        got = {name: box.call(name).value for name in ("subclass", "masked", "objects", "yes", "strided", "huge",
                                                       "scalar", "nested")}
    for name in ("subclass", "masked", "objects", "yes", "huge"):
        assert isinstance(got[name], ForeignObject), name
    assert "ndarray subclass" in got["subclass"].description
    assert "more than a reply may hold" in got["huge"].description
    assert type(got["strided"]) is np.ndarray and np.array_equal(got["strided"], np.arange(20.0).reshape(4, 5)[:, ::2].T)
    assert type(got["scalar"]) is np.float32 and got["scalar"] == 1.5
    assert isinstance(got["nested"], tuple) and np.array_equal(got["nested"][1][0], np.zeros(1))


def npy(array: np.ndarray, **options) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, **options)
    return buffer.getvalue()


@pytest.mark.parametrize("blob, reason", [
    (npy(np.array([{"a": 1}], dtype=object), allow_pickle=True), "not plain numeric"),
    (npy(np.zeros(2, dtype=[("a", "f8"), ("b", "i4")])), "not plain numeric"),
    (npy(np.zeros(3, dtype="U4")), "not plain numeric"),
    (npy(np.zeros(4)).replace(b"(4,)", b"(9,)"), "does not match"),
    (npy(np.zeros(4)).replace(b"(4,)", b"(1000000000000,)"), "does not match"),
    (b"\x93NUMPY\x03\x00" + npy(np.zeros(2))[8:], "version"),
    (b"PK\x03\x04" + b"\x00" * 40, "malformed"),
    (b"\x93NUMPY\x01\x00\xff\xff{'descr': '<f8', 'fortran_order': False, 'shape': (2,)", "malformed"),
], ids=["pickled-object", "structured", "unicode", "short", "huge-claim", "version-3", "zip", "truncated"])
def test_array_headers_are_checked_before_loading(blob, reason):
    with pytest.raises(BadReply, match=reason):
        load_checked_array(blob, 1 << 20)


def test_reply_trees_are_bounded_and_plain():
    deep = None
    for _ in range(50):
        deep = {"__tuple__": [deep]}
    with pytest.raises(BadReply, match="deeper"):
        decode_reply(deep, [], 1 << 20)
    with pytest.raises(BadReply, match="not there"):
        decode_reply({"__array__": 3}, [], 1 << 20)
    with pytest.raises(BadReply):
        decode_reply({"__pickle__": "..."}, [], 1 << 20)
    assert isinstance(decode_reply({"__scalar__": [1, 2], "dtype": "float64"}, [], 1 << 20), ForeignObject)
    assert decode_reply({"__scalar__": 2, "dtype": "int32"}, [], 1 << 20) == np.int32(2)


def test_calls_use_one_instance_several_times(server):
    code = """
        class Counter:
            def __init__(self, start):
                self.count = start
            def add(self, amount):
                self.count += amount
                return self.count
    """
    with Sandbox.open(source=source(code), limits=FAST, server=server) as box:
        outcome = box.call_method("Counter", init=(10,), calls=(("add", (1,), {}), ("add", (5,), None),
                                                                 ("count", None, None)))
    assert outcome.value == (11, 16, 16)


# ---- the fork server ---------------------------------------------------------------------
def test_limits_keep_their_field_names():
    names = {field.name for field in fields(Limits)}
    assert {"call_timeout", "submission_timeout", "memory_mb", "cpu_seconds", "max_processes", "file_size_mb",
            "max_reply_mb", "max_restarts"} <= names


def test_a_fork_server_pickles_as_its_address_and_serves_any_process(server):
    copy = pickle.loads(pickle.dumps(server))
    assert copy.address == server.address and copy.process is None
    assert run("def f():\n    return 7\n", "f", server=server.address).value == 7  # just the address will do
    copy.stop()  # only the process that started a server stops it
    assert run("def f():\n    return 8\n", "f", server=server).value == 8


def test_a_shared_fork_server_pays_the_start_up_once(server):
    code = "import numpy as np\ndef f():\n    return 1\n"
    shared, private = [], []
    for _ in range(5):
        started = time.monotonic()
        with Sandbox.open(source=source(code), limits=FAST, server=server):
            shared.append(time.monotonic() - started)
        started = time.monotonic()
        with Sandbox.open(source=source(code), limits=FAST):
            private.append(time.monotonic() - started)
    assert statistics.median(shared) < 0.5 * statistics.median(private), (shared, private)


def test_without_landlock_the_fallback_is_announced(tmp_path, monkeypatch):
    from grader.sandbox import isolation

    monkeypatch.setattr(isolation, "_WARNED", set())  # warned once per process: maybe already, by another test
    fallback = start_server(without=("landlock",))
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with Sandbox.open(source=source(PROBE), limits=FAST, server=fallback) as box:
                isolation = box.isolation
                report = ast.literal_eval(box.call("probe", [str(PROJECT / "solutions")]).value)
    finally:
        fallback.stop()
    assert isolation.startswith("no landlock") and "WARNING: Landlock is not available" in isolation
    assert any(issubclass(w.category, SandboxWarning) for w in caught)
    if ROOT:  # the mount namespace still hides the project
        assert report["seen"][str(PROJECT / "solutions")] != "read"


def test_a_server_that_cannot_start_says_why(monkeypatch, tmp_path):
    from grader.sandbox import link

    monkeypatch.setattr(link, "SERVER_SCRIPT", tmp_path / "forkserver.py")  # no server script there
    with pytest.raises(link.ForkServerError, match="did not start"):
        ForkServer.start(timeout=10)
    assert not any(Path(path).exists() for path in Path("/tmp").glob("mha-forkserver-*/server.log")
                   if str(tmp_path) in Path(path).read_text(errors="replace"))


def test_killed_worker_reports_its_signal(server):
    code = "import ctypes\ndef die():\n    ctypes.string_at(0)\n"  # a real crash: reading address 0
    outcome = run(code, "die", server=server)
    assert outcome.error.type == "WorkerGone" and "SIGSEGV" in outcome.error.message


def test_sigkill_to_the_pid_namespace_init_from_outside_works(server):
    with Sandbox.open(source=source("def f():\n    return 1\n"), limits=FAST, server=server) as box:
        pid = box.worker.pid
        os.kill(pid, signal.SIGKILL)
        outcome = box.call("f")
        assert outcome.error.type == "WorkerGone" and "SIGKILL" in outcome.error.message
        assert box.call("f").value == 1  # restarted


def test_the_server_makes_only_a_fresh_scratch_folder_writable(server, tmp_path):
    from grader.sandbox.client import ForkServerError

    victim = tmp_path / "mha-worker-not-really"  # right name, wrong place
    victim.mkdir()
    request = {"scratch": str(victim), "environment": {}, "limits": {}}
    reader, writer = os.pipe()
    try:
        with pytest.raises(ForkServerError, match="scratch folder of its own"):
            server.spawn(request, [reader, writer, writer], timeout=5)
    finally:
        os.close(reader)
        os.close(writer)


def test_the_cpu_limit_ends_a_spinning_worker_even_as_namespace_init(server):
    code = "def spin():\n    while True:\n        pass\n"
    started = time.monotonic()
    outcome = run(code, "spin", server=server, limits=Limits(call_timeout=10.0, cpu_seconds=1))
    assert outcome.error.type == "WorkerGone" and "SIGKILL" in outcome.error.message
    assert time.monotonic() - started < 5


def test_the_memory_limit_turns_a_huge_allocation_into_an_error(server):
    code = "import numpy as np\ndef hog():\n    return np.ones((1 << 30,))\n"  # 8 GiB
    outcome = run(code, "hog", server=server, limits=Limits(memory_mb=512))
    assert outcome.error.type in ("MemoryError", "_ArrayMemoryError")


def test_student_code_imports_the_granted_packages_and_no_others(server):
    code = """
        import importlib
        def imports(names):
            found = {}
            for name in names:
                try:
                    importlib.import_module(name)
                    found[name] = "imported"
                except ImportError as missing:
                    found[name] = type(missing).__name__
            return repr(found)
    """
    names = ["numpy.fft", "scipy.special", "click", "grader", "matplotlib", "_pytest"]
    found = ast.literal_eval(run(code, "imports", names, server=server).value)
    granted = {"numpy.fft"} | ({"scipy.special"} if importlib.util.find_spec("scipy") else set())
    assert {name for name, verdict in found.items() if verdict == "imported"} == granted, found


# ---- which of the student's functions a call entered ------------------------------------------
RECORDED = """
import numpy as np

def helper_not_called():
    return 0

def softmax(x):
    shifted = x - np.max(x, axis=-1, keepdims=True)
    return np.exp(shifted) / np.exp(shifted).sum(axis=-1, keepdims=True)

def scaled_dot_product_attention(Q, K, V):
    def nested(scores):  # a helper inside a function is not one of the module's own
        return softmax(scores)
    weights = nested(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]))
    return weights @ V, weights

class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        self.num_heads = num_heads

    def split_heads(self, x):
        B, T, D = x.shape
        return x.reshape(B, T, self.num_heads, D // self.num_heads).transpose(0, 2, 1, 3)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q)
        out, weights = scaled_dot_product_attention(q, q, q)
        return out

    def hang(self):
        self.split_heads(np.zeros((1, 2, 4)))
        while True:
            pass

def fails(x):
    return softmax(None)
"""


def test_each_call_reports_the_students_functions_it_entered_in_order(server):
    x = np.arange(24.0).reshape(1, 3, 8) / 10
    with Sandbox.open(source=source(RECORDED), limits=Limits(call_timeout=0.5, max_restarts=2), server=server) as box:
        forward = box.call_method("MultiHeadAttention", init=(8, 2), method="forward", args=(x, x, x))
        alone = box.call("softmax", x)
        failed = box.call("fails", x)
        batch = box.call_batch([({"function": "softmax"}, (x,), {}),
                                ({"class": "MultiHeadAttention", "init": [8, 2], "method": "split_heads"}, (x,), {})])
        hung = box.call_method("MultiHeadAttention", init=(8, 2), method="hang")
    assert forward.ok and forward.reached == ("__init__", "forward", "split_heads", "scaled_dot_product_attention",
                                              "softmax")
    assert alone.reached == ("softmax",)
    assert not failed.ok and failed.reached == ("fails", "softmax")
    assert [outcome.reached for outcome in batch] == [("softmax",), ("__init__", "split_heads")]
    assert hung.timed_out and hung.reached == ("__init__", "hang", "split_heads")  # announced before the hang


PARTIAL_BOUND = """
import functools
import numpy as np

def _normalise(x, *, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)

softmax = functools.partial(_normalise, axis=-1)
last_axis = functools.partial(functools.partial(_normalise), axis=-1)
numpy_one = functools.partial(np.sum, axis=-1)

def scaled_dot_product_attention(Q, K, V):
    w = softmax(Q @ np.swapaxes(K, -1, -2))
    return w @ V, w
"""


def test_a_name_bound_to_a_partial_of_a_students_function_is_recorded_under_that_name(server):
    x = np.arange(24.0).reshape(1, 2, 3, 4) / 10
    with Sandbox.open(source=source(PARTIAL_BOUND), limits=Limits(call_timeout=2, max_restarts=1),
                      server=server) as box:
        attention = box.call("scaled_dot_product_attention", x, x, x)
        nested = box.call("last_axis", x)
        foreign = box.call("numpy_one", x)
    assert attention.ok and attention.reached == ("scaled_dot_product_attention", "softmax")
    assert nested.ok and nested.reached == ("last_axis",)
    assert foreign.ok and foreign.reached == ()  # a partial of NumPy's own function is none of the student's
    assert np.allclose(attention.value[1].sum(axis=-1), 1.0)


def test_the_in_process_stand_in_records_the_same_names(tmp_path):
    from grader.sandbox.in_process import InProcessBox

    path = tmp_path / "recorded.py"
    path.write_text(textwrap.dedent(RECORDED))
    box = InProcessBox.load(path)
    x = np.arange(24.0).reshape(1, 3, 8) / 10
    forward = box.call_method("MultiHeadAttention", init=(8, 2), method="forward", args=(x, x, x))
    assert forward.reached == ("__init__", "forward", "split_heads", "scaled_dot_product_attention", "softmax")
    assert box.call("fails", x).reached == ("fails", "softmax")


STOOD_IN = """
    import numpy as np

    def double(x):
        return x * 3.0  # the submission's own (wrong) helper

    def outer(x):
        return double(x) + 1.0

    def greedy(x):
        try:
            return double(x)
        except BaseException:  # a stand-in with no answer: its call still ends
            return "swallowed"

    class Layer:
        def part(self, x):
            return x - 100.0

        def whole(self, x):
            return self.part(x) * 2.0
"""


def test_stand_ins_answer_from_their_table_ask_for_what_they_lack_and_leave_the_submission_as_it_was(server):
    x = np.arange(3.0)
    with Sandbox.open(source=source(STOOD_IN), limits=FAST, server=server) as box:
        asked = box.run({"function": "outer", "stand_ins": [["double", "function", []]]}, (x,))
        answered = box.run({"function": "outer", "stand_ins": [["double", "function", [[(x,), x * 2.0]]]]}, (x,))
        caught = box.run({"function": "greedy", "stand_ins": [["double", "function", []]]}, (x,))
        method = box.run({"class": "Layer", "init": [], "attributes": {}, "method": "whole",
                          "stand_ins": [["part", "method", [[(x,), x]]]]}, (x,))
        plain = box.call("outer", x)
    assert asked.missing == "double" and isinstance(asked.value, tuple) and np.array_equal(asked.value[0], x)
    assert answered.missing is None and np.array_equal(answered.value, x * 2.0 + 1.0)
    assert answered.stood_in == ("double",) and "double" not in answered.reached
    assert caught.missing == "double"  # the call's own except clause does not hide the question
    assert method.missing is None and np.array_equal(method.value, x * 2.0) and method.stood_in == ("part",)
    assert plain.missing is None and plain.stood_in == () and np.array_equal(plain.value, x * 3.0 + 1.0)
