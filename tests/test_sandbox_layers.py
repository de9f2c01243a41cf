"""The layers that keep workers apart from each other and from the host: IPC and mount namespaces, the
read-only tree, cgroups (or the watchdog), the scratch tmpfs, and an interpreter that lives anywhere.

Each needs root (namespaces, mounts, cgroups): elsewhere it skips with the reason, except in CI (CI=true),
where a skip would hide a missing layer and fails instead.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import textwrap
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from conftest import FIXTURES, PROJECT
from grader.grading.grade import grade_submission
from grader.sandbox import link
from grader.sandbox.client import Limits, Sandbox, SandboxWarning, start_server
from grader.sandbox.source import MAX_NOTES, Cell, SubmissionSource, notebook_source
from grader.sandbox.worker import landlock

ISOLATION = FIXTURES / "hostile" / "isolation"
FAST = Limits(call_timeout=2.0, submission_timeout=20.0, max_restarts=1)


def requires_root() -> None:
    if os.geteuid() != 0:
        if os.environ.get("CI"):
            pytest.fail("CI must run the sandbox tests as root (namespaces, mounts, cgroups)")
        pytest.skip("needs root: namespaces, mounts and cgroups are root's")


def source(code: str, name: str = "submission.py") -> SubmissionSource:
    return SubmissionSource(cells=(Cell(textwrap.dedent(code), name, name),), mode="module")


@pytest.fixture(scope="module")
def server():
    shared = start_server()
    yield shared
    shared.stop()


@pytest.fixture
def fallback():
    """A server that leaves out namespaces and cgroups: the layers of a machine without root."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SandboxWarning)
        lesser = start_server(without=("namespaces", "cgroups"))
        yield lesser
    lesser.stop()


def opened(code: str, server, limits: Limits = FAST) -> Sandbox:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SandboxWarning)
        box = Sandbox.open(source=source(code), limits=limits, server=server)
    assert box.load_report.ok, box.load_report.error
    return box


# ---- IPC: every worker its own, nothing outlives it ------------------------------------------------
IPC = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)

def make(key):
    return libc.shmget(key, 1 << 20, 0o1000 | 0o666), libc.msgget(key + 1, 0o1000 | 0o666)

def find(key):
    return libc.shmget(key, 0, 0), libc.msgget(key + 1, 0)
"""


def test_each_worker_has_its_own_ipc_namespace_and_its_objects_die_with_it(server):
    requires_root()
    key = 0x6D680000 + os.getpid() % 0xFFFF
    with opened(IPC, server) as first, opened(IPC, server) as second:
        made = first.call("make", key).value
        assert all(number >= 0 for number in made), made
        assert first.call("find", key).value == made  # its own objects, found again
        assert second.call("find", key).value == (-1, -1)  # another worker at the same time: nothing
    with opened(IPC, server) as later:
        assert later.call("find", key).value == (-1, -1)  # a worker after it: nothing
    listing = subprocess.run(["ipcs"], capture_output=True, text=True).stdout if shutil.which("ipcs") else ""
    assert f"0x{key:08x}" not in listing and f"0x{key + 1:08x}" not in listing


def test_without_namespaces_the_shared_ipc_is_announced(fallback):
    with opened("x = 1", fallback) as box:
        assert "WARNING: no IPC namespace" in box.isolation


def test_a_graded_workers_end_is_settled_later_and_leaves_nothing(server):
    """Closing a sandbox asks the keeper to end the worker and returns; settling reads the report, and then
    the worker, its host folder and its place in the queue are gone. The queue never holds more than
    CLOSING_HELD."""
    pids, folders = [], []
    for _ in range(link.CLOSING_HELD + 2):
        with opened("x = 1", server) as box:
            pids.append(box.worker.pid)
            folders.append(box.scratch)
        assert server.pool.waiting <= link.CLOSING_HELD
    server.pool.settle()
    assert server.pool.waiting == 0
    assert not any(folder.exists() for folder in folders)
    assert not [pid for pid in pids if Path(f"/proc/{pid}").exists()]  # pids are not reused this soon


# ---- cgroups: memory and processes per worker tree ---------------------------------------------------
def test_each_worker_runs_in_cgroups_of_its_own_that_go_with_it(server):
    requires_root()
    if "cgroup per worker" not in server.info.get("cgroups", ""):
        pytest.skip(f"this machine lets no cgroup be made here: {server.info.get('cgroups')}")
    limits = Limits(memory_mb=700, max_processes=40)
    with opened("x = 1", server, limits) as box:
        assert "cgroup per worker" in box.isolation
        memberships = Path(f"/proc/{box.worker.pid}/cgroup").read_text()
        folders = worker_cgroup_folders(memberships)
        assert folders and all(Path(folder).name == Path(box.worker_folder).name for folder in folders), memberships
        settings = {name: Path(folder, name).read_text().strip() for folder in folders
                    for name in ("memory.limit_in_bytes", "memory.max", "pids.max") if Path(folder, name).exists()}
        assert settings.get("memory.limit_in_bytes", settings.get("memory.max")) == str(700 << 20)
        assert settings["pids.max"] == "40"
    server.pool.settle()  # the grading process reads the keeper's report later (the next start, the server's stop)
    assert not any(Path(folder).exists() for folder in folders)


def worker_cgroup_folders(memberships: str) -> list[str]:
    folders = []
    for line in memberships.splitlines():
        _, names, path = line.split(":", 2)
        if "mha-worker-" not in path:
            continue
        for name in (names.split(",") if names else [""]):
            candidate = Path("/sys/fs/cgroup") / name / path.lstrip("/")
            if candidate.is_dir():
                folders.append(str(candidate))
    return folders


@pytest.mark.parametrize("without", [(), ("cgroups",)], ids=["cgroup", "watchdog"])
def test_a_tree_of_processes_cannot_hold_more_than_the_memory_limit(without):
    """Three children of 1.2 GiB each, under a 2 GiB limit: killed by the cgroup, or by the keeper's watchdog."""
    requires_root()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SandboxWarning)
        shared = start_server(without=without)
    try:
        code = (ISOLATION / "memory_tree.py").read_text()
        with opened(code, shared, Limits(call_timeout=8.0, memory_mb=2048)) as box:
            x = np.ones((1, 1, 2, 2))
            outcome = box.call("scaled_dot_product_attention", x, x, x)
            isolation = box.isolation
    finally:
        shared.stop()
    if outcome.error.type == "MemoryError":  # the kernel killed children: fewer than two held at once
        assert int(outcome.error.message.split()[0]) <= 1, outcome.error.message
    else:
        assert outcome.error.type == "WorkerGone" and "MiB" in outcome.error.message, outcome.error
    assert ("memory watchdog" in isolation) == bool(without) or "cgroup per worker" not in str(without)


def test_processes_are_counted_per_worker_tree(server):
    requires_root()
    code = """
        import os, time
        def fork_many(count):
            made = 0
            for _ in range(count):
                try:
                    if os.fork() == 0:
                        time.sleep(5)
                        os._exit(0)
                    made += 1
                except OSError:
                    break
            return made
    """
    with opened(code, server, Limits(max_processes=12)) as box:
        made = box.call("fork_many", 50).value
    assert made < 12


# ---- the scratch folder: a tmpfs of its own, bounded ------------------------------------------------
def test_the_scratch_folder_is_a_bounded_tmpfs_that_never_reaches_the_host(server):
    requires_root()
    code = (ISOLATION / "scratch_fill.py").read_text()
    with opened(code, server, Limits(scratch_mb=32)) as box:
        report = box.call("scaled_dot_product_attention", None, None, None).error.message
        host_files = sorted(path.name for path in box.scratch.iterdir())
        assert "scratch tmpfs of 32 MiB" in box.isolation
    assert int(report.split("wrote ")[1].split()[0]) <= 32 and "No space left" in report, report
    assert host_files == ["output.txt"]  # what it wrote stayed in its own tmpfs


def test_without_a_tmpfs_the_keeper_kills_a_worker_that_fills_its_folder(fallback):
    code = (ISOLATION / "scratch_fill.py").read_text()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SandboxWarning)
        box = Sandbox.open(source=source(code), limits=Limits(scratch_mb=32), server=fallback)
    with box:
        assert not box.load_report.ok and "scratch folder" in box.load_report.error.message


# ---- the read-only tree: no socket, no package, no project of the host -----------------------------------
def test_the_worker_sees_only_the_interpreter_numpy_and_scipy(server):
    requires_root()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SandboxWarning)
        unguarded = start_server(without=("landlock",))  # only the tree decides what exists
    code = """
        import os
        def tops():
            return sorted(os.listdir("/"))
        def exists(paths):
            return [path for path in paths if os.path.lexists(path)]
    """
    try:
        with opened(code, unguarded) as box:
            tops = box.call("tops").value
            # the project's own files (its folder itself may hold the environment, e.g. a .venv inside the clone)
            present = box.call("exists", [str(PROJECT / "solutions"), str(PROJECT / "grader"), "/run", "/var/run",
                                          "/proc", "/sys", "/home",
                                          "/usr/lib/python3/dist-packages/yaml", os.path.expanduser("~/.ssh"),
                                          os.path.dirname(np.__file__)]).value
    finally:
        unguarded.stop()
    assert set(tops) <= {"dev", "etc", "lib", "lib64", "usr", "tmp", "opt", "root", "home", "work", "srv", "var",
                         "bin", "sbin", "mnt", "nix", "snap", *Path(sys.prefix).parts[1:2],
                         *Path(np.__file__).parts[1:2]}, tops
    assert "proc" not in tops and "run" not in tops and "sys" not in tops
    assert present == [os.path.dirname(np.__file__)], present


def test_no_unix_socket_of_the_host_can_be_reached_even_by_its_path(server, tmp_path):
    requires_root()
    folder = Path("/run") if os.access("/run", os.W_OK) else Path.home()
    socket_folder = Path(folder) / f"mha-test-socket-{os.getpid()}"
    socket_folder.mkdir(mode=0o755)
    path = socket_folder / "host.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    path.chmod(0o777)
    listener.listen(4)
    listener.settimeout(0.3)
    code = """
        import os, socket
        def reach(path):
            try:
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
                    client.settimeout(0.3)
                    client.connect(path)
                return "connected"
            except OSError as refused:
                return type(refused).__name__
        def listen():
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            server.bind("worker.sock")
            server.listen(1)
            globals()["kept"] = server
            return os.path.abspath("worker.sock")
    """
    try:
        with opened(code, server) as box:
            assert box.call("reach", str(path)).value in ("FileNotFoundError", "PermissionError")
            inside = box.call("listen").value
            assert not Path(inside).exists()  # the worker's own socket lives in its tmpfs: the host cannot reach it
        with pytest.raises(socket.timeout):
            listener.accept()
    finally:
        listener.close()
        shutil.rmtree(socket_folder, ignore_errors=True)


def test_landlock_denies_pathname_sockets_where_the_kernel_can():
    rights = landlock.FS_RIGHTS_BY_ABI
    assert rights[8] & landlock.RESOLVE_UNIX and not rights[7] & landlock.RESOLVE_UNIX
    assert not landlock.READ_RIGHTS & landlock.RESOLVE_UNIX  # granted to the scratch folder only
    assert "unix" in landlock.Enforced(abi=8, filesystem=True, network=True, signals=True,
                                       unix_sockets=True).describe()


def test_system_packages_cannot_be_imported_even_from_their_own_path(server):
    code = (ISOLATION / "system_packages.py").read_text()
    with opened(code, server) as box:
        report = box.call("softmax", None).error.message
    assert report.endswith("NumPy and SciPy: []"), report


# ---- notebooks: what skipped lines may add to a student's outputs --------------------------------------
def test_a_flood_of_magic_lines_adds_a_bounded_number_of_notes(tmp_path, server):
    honest = (FIXTURES / "hostile" / "honest_softmax_only.py").read_text()
    flood = "%1\n" * 250_000 + "!\n" * 250_000  # 500,000 lines: a notebook under the 2 MiB a file may have
    cells = [{"cell_type": "code", "metadata": {}, "source": honest, "outputs": [], "execution_count": None},
             {"cell_type": "code", "metadata": {}, "source": flood, "outputs": [], "execution_count": None}]
    text = json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    read = notebook_source(text, name="flood.ipynb")
    assert len(read.notes) == MAX_NOTES + 1
    assert "499,980 more notes" in read.notes[-1].render("en")
    notebook = tmp_path / "flood.ipynb"
    notebook.write_text(text)
    result = grade_submission(path=notebook, visibility="all", server=server)
    assert result.status == "graded" and result.score > 0
    assert len(json.dumps(result.to_dict())) < 100_000


# ---- an interpreter anywhere: a virtual environment under /tmp -----------------------------------------
USES_LAZY_SUBMODULES = """
import numpy as np
import numpy.fft
import numpy.ma
import numpy.testing
import numpy.typing
from scipy.special import softmax as scipy_softmax

assert np.fft.rfft(np.ones(4))[0] == 4.0


def softmax(x):
    return scipy_softmax(x, axis=-1)
"""


def test_a_virtual_environment_under_tmp_grades_numpy_and_scipy_submodules(tmp_path):
    """NumPy and SciPy installed under /tmp, the interpreter a --system-site-packages venv of the base one."""
    requires_root()
    import scipy

    venv = tmp_path / "venv"
    subprocess.run([sys._base_executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)],
                   check=True, capture_output=True)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    for package in (Path(np.__file__).parent, Path(scipy.__file__).parent):
        for folder in (package, package.with_name(package.name + ".libs")):
            if folder.exists():
                shutil.copytree(folder, site / folder.name, copy_function=_link_or_copy)
    # the grader's other dependencies from this environment, after NumPy and SciPy of the new one
    (site / "grader_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    submission = tmp_path / "class" / "alice.py"
    submission.parent.mkdir()
    reference = (PROJECT / "solutions" / "multihead_attention.py").read_text()
    submission.write_text(reference.replace("def softmax(x):", "def _own_softmax(x):") + USES_LAZY_SUBMODULES)
    environment = dict(os.environ, PYTHONPATH=str(PROJECT))
    found = subprocess.run([str(python), "-c", "import numpy, scipy; print(numpy.__file__, scipy.__file__)"],
                           check=True, capture_output=True, text=True, env=environment).stdout
    assert found.count(str(tmp_path)) == 2, found  # the copies under /tmp, not this environment's
    done = subprocess.run([str(python), "-c", "from grader.cli import main; main()", "grade", str(submission.parent),
                           "--out", str(tmp_path / "out"), "--jobs", "1"], capture_output=True, text=True,
                          env=environment, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((tmp_path / "out" / "results.json").read_text())[0]
    assert result["status"] == "graded", result["error"]
    assert result["score"] == result["max_score"], [test["message"] for test in result["tests"]
                                                    if test["outcome"] != "passed"][:3]
    assert f"numpy from {site / 'numpy'}" in result["isolation"]


def _link_or_copy(source: str, target: str) -> str:
    try:
        os.link(source, target)
        return target
    except OSError:  # another file system
        return shutil.copy2(source, target)


# ---- start-up ----------------------------------------------------------------------------------------------
def test_a_worker_reports_when_each_step_of_its_start_ended(server):
    """Seconds after Sandbox.open began; negative for what was made before: a spare keeper and its worker
    confine themselves ahead of any request, and the worker a submission uses was asked for while the one
    before was graded."""
    with opened("def f():\n    return 1\n", server) as box:
        steps = dict(box.timings.phases)
        loaded = box.timings.load_seconds
        assert box.call("f").value == 1
        timings = box.timings
    assert 0 < loaded < 30 and 0 < timings.worker_seconds < 30  # what the worker says it spent on the call
    assert timings.phases == tuple(steps.items()) and timings.load_seconds == loaded  # a record: replaced, not edited
    assert {"keeper forked", "worker forked", "landlock", "ready", "request", "hello", "loaded"} <= set(steps), steps
    assert -600 < steps["keeper forked"] < steps["worker forked"] < steps["ready"] < steps["hello"]
    assert steps["request"] < steps["hello"] < steps["loaded"] < 30


def test_concurrent_workers_start_and_stop_cleanly(server):
    requires_root()
    errors = []

    def one():
        try:
            with opened("def f():\n    return 3\n", server) as box:
                assert box.call("f").value == 3
        except Exception as failed:  # noqa: BLE001 - reported below
            errors.append(failed)

    threads = [threading.Thread(target=one) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors


# ---- where cgroups can go: v1 and v2, read from /proc --------------------------------------------------
def fake_proc(tmp_path: Path, cgroup: str, mountinfo: str) -> str:
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "cgroup").write_text(cgroup)
    (proc / "mountinfo").write_text(mountinfo)
    return str(proc)


def test_cgroup_v2_is_used_only_where_the_graders_cgroup_hands_the_controllers_down(tmp_path):
    from grader.sandbox.worker import cgroups

    mount = tmp_path / "unified"
    (mount / "grader.slice").mkdir(parents=True)
    line = f"30 25 0:26 / {mount} rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
    proc = fake_proc(tmp_path, "0::/grader.slice\n", line)
    (mount / "grader.slice" / "cgroup.subtree_control").write_text("io\n")
    refused = cgroups.discover(proc)
    assert not refused.hierarchies
    assert all(f"does not hand {name}" in refused.missing for name in ("memory", "pids", "cpu"))
    (mount / "grader.slice" / "cgroup.subtree_control").write_text("cpu io\n")
    cpu_only = cgroups.discover(proc)  # a CPU share alone; the watchdog counts memory
    assert cpu_only.provides("cpu") and not cpu_only.provides("memory") and "does not hand memory" in cpu_only.missing
    (mount / "grader.slice" / "cgroup.subtree_control").write_text("cpu io memory pids\n")
    delegated = cgroups.discover(proc)
    assert delegated.hierarchies == (cgroups.Hierarchy(2, str(mount / "grader.slice"), ("memory", "pids", "cpu")),)
    assert delegated.describe() == "cgroup per worker (v2 memory+pids+cpu)"
    worker = cgroups.WorkerCgroup(delegated, "mha-worker-test")
    folder = mount / "grader.slice" / "mha-worker-test"
    for name in ("memory.max", "pids.max", "cpu.weight", "cpu.max"):  # files a real cgroup has from the start
        (folder / name).write_text("")
    worker.limit({"memory_mb": 100, "max_processes": 7})
    assert (folder / "memory.max").read_text() == str(100 << 20) and (folder / "pids.max").read_text() == "7"
    assert (folder / "cpu.weight").read_text() == "100" and (folder / "cpu.max").read_text() == "100000 100000"
    for name in ("memory.max", "pids.max", "cpu.weight", "cpu.max"):  # a real cgroup's files go with it
        (folder / name).unlink()
    assert worker.remove() and not folder.exists()


def test_cgroup_v1_hierarchies_are_found_by_controller(tmp_path):
    from grader.sandbox.worker import cgroups

    memory, pids, cpu, cpuacct = (tmp_path / name for name in ("memory", "pids", "cpu", "cpuacct"))
    (memory / "jobs" / "grader").mkdir(parents=True)
    for folder in (pids, cpu, cpuacct):
        folder.mkdir()
    # cpuacct's options hold "cpu" as a part of a word: only the cpu hierarchy is the cpu controller's
    mountinfo = (f"35 25 0:30 / {memory} rw - cgroup cgroup rw,memory\n"
                 f"36 25 0:31 / {pids} rw - cgroup cgroup rw,pids\n"
                 f"37 25 0:32 / {cpuacct} rw - cgroup cgroup rw,cpuacct\n"
                 f"38 25 0:33 / {cpu} rw - cgroup cgroup rw,cpu\n")
    proc = fake_proc(tmp_path, "4:memory:/jobs/grader\n8:pids:/\n2:cpuacct:/\n1:cpu:/\n0::/\n", mountinfo)
    found = cgroups.discover(proc)
    assert found.hierarchies == (cgroups.Hierarchy(1, str(memory / "jobs" / "grader"), ("memory",)),
                                 cgroups.Hierarchy(1, str(pids), ("pids",)), cgroups.Hierarchy(1, str(cpu), ("cpu",)))
    assert found.provides("memory") and found.provides("pids") and found.provides("cpu") and not found.missing


# ---- workers made ahead: each still for one submission ----------------------------------------------------
def test_workers_made_ahead_serve_one_submission_each_and_go_with_their_server():
    code = "import os\ndef where():\n    return os.getpid(), os.getcwd()\n"
    shared = start_server()
    try:
        seen = []
        for limits in (FAST, FAST, Limits(memory_mb=900)):  # the last one: the reserved worker does not suit
            with opened(code, shared, limits) as box:
                seen.append((box.worker.pid, box.worker_folder, box.call("where").value))
        assert len({pid for pid, _, _ in seen}) == 3 and len({folder for _, folder, _ in seen}) == 3
        assert all(reported[1] == folder for _, folder, reported in seen)
    finally:
        shared.stop()
    deadline = time.monotonic() + 3  # a spare ends on its own once its server has gone
    while processes_of(shared.address) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_of(shared.address) == [], "keepers of a stopped server (its spare, a reserved worker) remain"


def processes_of(address: str) -> list[str]:
    """Processes forked from the fork server at ``address`` (they keep its command line)."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and address.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                found.append(entry)
        except OSError:
            pass
    return found


def test_a_keepers_report_is_polled_without_blocking(tmp_path):
    """``reported`` never waits: nothing sent yet is False, a pid message is kept and still False, the
    report is True with its status, and a keeper that closed its connection is True (nothing more comes);
    waiting for the report of such a keeper ends at once, without a status (it used to spin forever)."""
    import json as _json

    def link_over(pair):
        read_end, write_end = os.pipe()
        return link.WorkerLink(tmp_path, pair[0], None, write_end, read_end)

    pair = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    waiting = link_over(pair)
    assert waiting.reported() is False
    pair[1].send(_json.dumps({"pid": 4242}).encode())
    assert waiting.reported() is False and waiting.pid == 4242
    pair[1].send(_json.dumps({"status": -9, "reason": ""}).encode())
    assert waiting.reported() is True and waiting.status == -9
    waiting.finish(timeout=1)

    closed = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    gone = link_over(closed)
    closed[1].close()
    assert gone.reported() is True and gone.status is None
    started = time.monotonic()
    gone.finish(timeout=5)
    assert gone.status is None and time.monotonic() - started < 1
