"""The warm check server (``grader.warm``): checks it answers say exactly what a cold check says, through the
installed ``mha``; it is never trusted when stale or in a folder others may enter; Ctrl-C and the spinner
behave as in a cold check; it ends when idle; the student's process imports no NumPy."""

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import warm_logs
from conftest import PROJECT, require

REFERENCE = PROJECT / "solutions" / "multihead_attention.py"
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the warm server is Linux's")


def _mha() -> str:
    found = shutil.which("mha", path=str(Path(sys.executable).parent)) or shutil.which("mha")
    require(found is not None, "the installed `mha` command is not on PATH")
    return found


@contextlib.contextmanager
def warm_settings():
    """``(runtime folder, environment variables)`` for checks that use a warm server in a private folder of
    their own; the servers started there are ended afterwards (by the pids their logs give)."""
    import tempfile

    runtime = Path(tempfile.mkdtemp(prefix="mha-run-"))  # short: a socket's path holds at most 107 bytes
    try:
        yield runtime, {"MHA_CHECK_SERVER": "on", "MHA_RUNTIME_DIR": str(runtime), "MHA_CHECK_SERVER_IDLE": "120",
                        "NO_COLOR": "1"}
    finally:
        for pid in _server_pids(runtime):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        shutil.rmtree(runtime, ignore_errors=True)


@pytest.fixture
def warm(monkeypatch):
    """The test's environment set for ``warm_settings``; its runtime folder."""
    with warm_settings() as (runtime, settings):
        for name, value in settings.items():
            monkeypatch.setenv(name, value)
        yield runtime


def _server_pids(runtime: Path) -> list[int]:
    """The warm servers started with ``runtime`` that still run (a pid whose process is a server)."""
    return warm_logs.running(runtime, "grader.warm.server")


def _wait_listening(runtime: Path, count: int = 1, timeout: float = 60.0) -> None:
    warm_logs.wait_listening(runtime, count, timeout, "no warm server started")


def _check(*words, env=None, cwd=PROJECT):
    return subprocess.run([_mha(), "check", *map(str, words)], capture_output=True, text=True, cwd=cwd,
                          stdin=subprocess.DEVNULL,
                          env=env or os.environ.copy(), timeout=120)


def _buggy(folder: Path) -> Path:
    buggy = folder / "multihead_attention.py"
    buggy.write_text(REFERENCE.read_text(encoding="utf-8").replace("/ np.sqrt(d_k)", "", 1), encoding="utf-8")
    return buggy


def _without_timing(text: str) -> str:
    result = json.loads(text)
    result.pop("duration", None)
    return json.dumps(result, sort_keys=True)


def test_a_warm_check_says_what_a_cold_check_says(warm, tmp_path):
    buggy = _buggy(tmp_path)
    first = _check(REFERENCE)  # cold: starts the server afterwards
    assert first.returncode == 0, first.stderr
    _wait_listening(warm)
    cold_env = {**os.environ, "MHA_CHECK_SERVER": "off"}
    cases = [((REFERENCE,), None), ((buggy,), None), ((buggy, "--lang", "zh"), None),
             ((buggy, "--function", "scaled_dot_product_attention", "--first"), None),
             ((REFERENCE, "--function", "softmax"), None), ((buggy, "--json"), _without_timing),
             ((tmp_path / "absent.py",), None)]
    for words, normal in cases:
        served_before = warm_logs.served(warm)
        hot, cold = _check(*words), _check(*words, env=cold_env)
        assert warm_logs.served(warm) == served_before + 1, (words, warm_logs.log(warm))
        assert (hot.returncode, hot.stderr) == (cold.returncode, cold.stderr), words
        assert (normal or str)(hot.stdout) == (normal or str)(cold.stdout), words
    assert "attention-no-scale" in _check(buggy).stdout
    said = "Served by your warm check server"  # behind --verbose only, and only when it was
    assert said in _check(REFERENCE, "--verbose").stdout.splitlines()[-1]
    assert said not in _check(REFERENCE, "--verbose", env=cold_env).stdout


def test_the_folder_it_runs_from_follows_the_student(warm, tmp_path):
    """The file named relative to the student's folder, their default file, their environment."""
    (tmp_path / "exercises").mkdir()
    shutil.copy(REFERENCE, tmp_path / "exercises" / "multihead_attention.py")
    assert _check(REFERENCE).returncode == 0
    _wait_listening(warm)
    done = _check(env={**os.environ, "LANG": "C.UTF-8", "MHA_LANG": "zh"}, cwd=tmp_path)
    served = _check("exercises/multihead_attention.py", cwd=tmp_path)
    assert done.returncode == 0 and served.returncode == 0, done.stderr + served.stderr
    assert "exercises/multihead_attention.py" in served.stdout
    assert warm_logs.served(warm) == 1  # MHA_LANG is in the key: that check went to another (a cold) one


def test_a_stale_server_is_not_trusted(warm, tmp_path, monkeypatch):
    """A file the server was built from changes (here a sitecustomize on PYTHONPATH, imported by both): the
    server refuses, ends, the check runs cold and says the same, and the next cold check starts a fresh one."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("GREETING = 'one'\n", encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", str(site))
    assert _check(REFERENCE).returncode == 0
    _wait_listening(warm)
    assert _check(REFERENCE).returncode == 0 and warm_logs.served(warm) == 1
    (site / "sitecustomize.py").write_text("GREETING = 'two, changed'\n", encoding="utf-8")
    after = _check(REFERENCE)
    cold = _check(REFERENCE, env={**os.environ, "MHA_CHECK_SERVER": "off"})
    assert (after.returncode, after.stdout) == (0, cold.stdout)
    assert warm_logs.served(warm) == 1, warm_logs.log(warm)
    assert re.search(r"^stale: .*sitecustomize\.py$", warm_logs.log(warm), re.M), warm_logs.log(warm)
    _wait_listening(warm, count=2)  # the cold check above started the next server
    assert _check(REFERENCE).returncode == 0 and warm_logs.served(warm) == 2


def test_a_folder_others_may_enter_is_never_used(warm, tmp_path):
    os.chmod(warm, 0o755)
    for _ in range(2):
        assert _check(REFERENCE).returncode == 0
    time.sleep(1.0)
    assert list(warm.iterdir()) == []


def test_an_idle_server_ends_and_leaves_no_socket(warm, monkeypatch):
    monkeypatch.setenv("MHA_CHECK_SERVER_IDLE", "2")
    assert _check(REFERENCE).returncode == 0
    _wait_listening(warm)
    [pid] = _server_pids(warm)
    deadline = time.monotonic() + 30
    while os.path.exists(f"/proc/{pid}") and "zombie" not in _state(pid):
        assert time.monotonic() < deadline, "the idle server did not end"
        time.sleep(0.2)
    assert not list(warm.glob("*.sock"))


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text().split("State:")[1].split("\n")[0].lower()
    except (OSError, IndexError):
        return "zombie"


def test_the_students_process_imports_no_numpy_when_served(warm):
    """The launcher as ``mha`` runs it, from ``python -c`` (another import path, so another server's key:
    the first run is cold and starts it)."""
    code = ("import atexit, sys\n"
            "atexit.register(lambda: print(sorted(m for m in ('numpy', 'click', 'rich') if m in sys.modules),"
            " file=sys.stderr))\n"
            "sys.argv = ['mha', 'check', sys.argv[1]]\nfrom grader.warm.launcher import main\nmain()\n")
    runs = []
    for _ in range(2):
        runs.append(subprocess.run([sys.executable, "-c", code, str(REFERENCE)], capture_output=True, text=True,
                                   stdin=subprocess.DEVNULL, cwd=PROJECT, timeout=120))
        assert runs[-1].returncode == 0, runs[-1].stderr
        _wait_listening(warm)
    cold, served = (run.stderr.strip().splitlines()[-1] for run in runs)
    assert cold == "['click', 'numpy', 'rich']" and served == "[]"
    assert warm_logs.served(warm) == 1
    assert runs[0].stdout == runs[1].stdout


def test_a_hang_shows_the_spinner_and_ctrl_c_stops_it_as_a_cold_check_does(warm, tmp_path):
    pexpect = pytest.importorskip("pexpect")
    hanging = tmp_path / "multihead_attention.py"  # every function and method hangs: seconds of call limits
    hanging.write_text(re.sub(r"^( *)(def \w+\(.*\):\n)", r"\1\2\1    while True:\n\1        pass\n",
                              REFERENCE.read_text(encoding="utf-8"), flags=re.M), encoding="utf-8")
    assert _check(REFERENCE).returncode == 0
    _wait_listening(warm)
    outcomes = {}
    for mode in ("on", "off"):
        child = pexpect.spawn(_mha(), ["check", str(hanging)], env={**os.environ, "MHA_CHECK_SERVER": mode},
                              cwd=str(PROJECT), encoding="utf-8", timeout=60, dimensions=(40, 100))
        child.expect(r"checking \w+")  # the spinner, once checking has taken half a second
        child.sendintr()
        child.expect(pexpect.EOF)
        child.close()
        outcomes[mode] = (child.exitstatus, child.signalstatus, "Aborted" in child.before)
    assert outcomes["on"] == outcomes["off"], outcomes
    assert warm_logs.served(warm) == 1
    assert _check(REFERENCE).returncode == 0 and warm_logs.served(warm) == 2  # the server goes on


def test_the_workers_sources_are_watched_though_another_process_reads_them():
    """The fork server reads the worker's files in its own process, unseen by the server's audit hook: an
    edited worker would go on serving checks with the code it had (a named tuple refused after the fix)."""
    code = ("import json; from grader.warm.server import module_files; import sys;"
            "print(json.dumps(['grader.sandbox.worker.worker_main' in sys.modules, sorted(module_files())]))")
    loaded, files = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                              cwd=PROJECT, check=True).stdout)
    worker = PROJECT / "grader" / "sandbox" / "worker"
    assert not loaded
    assert {str(worker / name) for name in ("worker_main.py", "forkserver.py", "arrays.py")} <= set(files)
