"""The relayed warm check server (``grader.warm.standby``, ``grader.warm.relay``): where the portable worker is the
sandbox, every check after a session's first is answered by a standby made ahead, and says what a cold check says.

Windows is emulated as in tests/test_portable.py (``tests/emulation/sitecustomize.py``: its POSIX surface gone,
``multiprocessing.connection``'s named pipes as Unix sockets, the one difference); macOS by the same file's
``MHA_EMULATE=macos`` (no ``os.pipe2`` nor ``SO_PEERCRED``: the portable worker, and ``LOCAL_PEERCRED`` asked of
the socket's peer). Every check runs through the installed ``mha``.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import warm_logs
from conftest import FIXTURES, PROJECT, mutants, require

EMULATION = PROJECT / "tests" / "emulation"
MHA = Path(sys.executable).parent / "mha"
REFERENCE = PROJECT / "solutions" / "multihead_attention.py"
MISTAKE = mutants("multihead_attention") / "mistakes" / "split_heads_no_transpose.py"
HANG = FIXTURES / "hangs" / "softmax_while_true.py"
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="emulated on Linux")


def _settings(folder: Path, emulation: Path, system: str) -> dict:
    """The environment of a student's ``mha`` on the emulated ``system`` with the warm server on."""
    wrapper = folder / "python"  # sys.executable there: -c (a standby) keeps site, a worker's script runs -I -S
    wrapper.write_text(f'#!/bin/sh\ncase "$1" in\n  -c) exec "{sys.executable}" "{emulation}/sitecustomize.py" "$@";;\n'
                       f'  *) exec "{sys.executable}" -I -S "{emulation}/sitecustomize.py" "$@";;\nesac\n',
                       encoding="utf-8")
    wrapper.chmod(0o755)
    runtime = folder / "run"
    runtime.mkdir(mode=0o700)
    home = folder / "home"
    home.mkdir()
    settings = dict(os.environ, PYTHONPATH=str(emulation), MHA_EMULATED_EXECUTABLE=str(wrapper), HOME=str(home),
                    MHA_ISOLATION="auto", MHA_CHECK_SERVER="on", MHA_RUNTIME_DIR=str(runtime),
                    MHA_CHECK_SERVER_IDLE="120", NO_COLOR="1")
    if system == "windows":
        pipes = folder / "pipes"
        pipes.mkdir(mode=0o700)
        settings["MHA_EMULATED_PIPES"] = str(pipes)
    else:
        settings["MHA_EMULATE"] = "macos"
    return settings


@pytest.fixture(params=["windows", "macos"])
def laptop(request):
    """``(environment, runtime folder)`` of an emulated laptop; its standbys ended afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="mha-w-"))  # short: a socket's path holds at most 107 bytes
    emulation = folder / "emulation"  # a copy the test may edit (a file every standby was built from)
    shutil.copytree(EMULATION, emulation, ignore=shutil.ignore_patterns("__pycache__"))
    settings = _settings(folder, emulation, request.param)
    try:
        yield settings, folder / "run"
    finally:
        for pid in _standbys(folder / "run"):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        shutil.rmtree(folder, ignore_errors=True)


def _standbys(runtime: Path) -> list[int]:
    return warm_logs.running(runtime, "grader.warm.standby")


def _listening(runtime: Path, count: int, timeout: float = 90.0) -> None:
    """Wait for the ``count``-th standby to listen (each check served starts the next)."""
    warm_logs.wait_listening(runtime, count, timeout, "no standby listens")


def mha(*words, env: dict, **options) -> subprocess.CompletedProcess:
    require(MHA.is_file(), f"the mha command is not installed beside {sys.executable} (pip install -e .)")
    return subprocess.run([str(MHA), "check", *map(str, words)], capture_output=True, text=True, env=env,
                          cwd=PROJECT, stdin=subprocess.DEVNULL, timeout=180, **options)


def _quiet(done: subprocess.CompletedProcess) -> None:
    assert done.stderr == "", done.stderr[-3000:]
    assert "Traceback" not in done.stdout, done.stdout[-3000:]


# A call limit is the reference's time measured on this machine (at least 0.5 s): a check that hit it forgets
# the kept measurement, so the next check measures afresh, and on a busy machine may get another figure
_MEASURED_LIMIT = re.compile(r'(call limits |within |"limit": "?)\d+(?:\.\d+)?')


def _comparable(done: subprocess.CompletedProcess, as_json: bool) -> tuple:
    if not as_json:
        return done.returncode, done.stdout, done.stderr
    result = json.loads(_MEASURED_LIMIT.sub(r"\g<1>0", done.stdout))
    result.pop("duration", None)
    return done.returncode, result, done.stderr


def test_served_checks_say_what_cold_checks_say(laptop):
    """Correct code, one mistake and a hang, as text and as JSON: a standby answers each (and the next is
    made meanwhile); the same status, report and silence on stderr as with the server off."""
    env, runtime = laptop
    first = mha(REFERENCE, env=env)  # cold: starts the first standby afterwards
    assert first.returncode == 0, first.stderr
    _quiet(first)
    cold_env = {**env, "MHA_CHECK_SERVER": "off"}
    cases = [((REFERENCE,), 0), ((MISTAKE,), 1), ((MISTAKE, "--json"), 1), ((HANG, "--json"), 1),
             ((MISTAKE, "--function", "split_heads", "--lang", "zh"), 1)]
    for number, (words, status) in enumerate(cases, start=1):
        _listening(runtime, number)
        started = time.monotonic()
        warm = mha(*words, env=env)
        took = time.monotonic() - started
        assert warm_logs.served(runtime) == number, (words, warm_logs.log(runtime))
        cold = mha(*words, env=cold_env)
        assert warm.returncode == status, warm.stdout[-2000:] + warm.stderr[-2000:]
        assert _comparable(warm, "--json" in words) == _comparable(cold, "--json" in words), words
        _quiet(warm)
        if words[0] == HANG:
            outcomes = {test["outcome"] for test in json.loads(warm.stdout)["tests"] if test["function"] == "softmax"}
            assert outcomes == {"timeout"} and took < 30, (outcomes, took)
    assert "split-heads-no-transpose" in mha(MISTAKE, "--json", env=env).stdout
    _listening(runtime, len(cases) + 2)
    said = "Served by your warm check server"  # behind --verbose only, and only when it was
    assert said in mha(REFERENCE, "--verbose", env=env).stdout.splitlines()[-1]
    assert said not in mha(REFERENCE, "--verbose", env=cold_env).stdout


def test_a_file_it_was_built_from_changed_refuses_the_standby(laptop):
    """The emulation's sitecustomize (imported by every standby) is edited: the standby refuses, ends, and the
    check runs cold, saying the same; the next cold check's standby serves again."""
    env, runtime = laptop
    assert mha(REFERENCE, env=env).returncode == 0
    _listening(runtime, 1)
    site = Path(env["PYTHONPATH"]) / "sitecustomize.py"
    site.write_text(site.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    after = mha(REFERENCE, env=env)
    cold = mha(REFERENCE, env={**env, "MHA_CHECK_SERVER": "off"})
    assert (after.returncode, after.stdout) == (0, cold.stdout)
    _quiet(after)
    assert warm_logs.served(runtime) == 0
    assert re.search(r"^stale: .*sitecustomize\.py$", warm_logs.log(runtime), re.M), warm_logs.log(runtime)
    _listening(runtime, 2)  # the cold check above started a fresh standby
    assert mha(REFERENCE, env=env).returncode == 0 and warm_logs.served(runtime) == 1


def test_switched_off_no_standby_is_started_or_asked(laptop):
    env, runtime = laptop
    off = {**env, "MHA_CHECK_SERVER": "off"}
    for _ in range(2):
        done = mha(REFERENCE, env=off)
        assert done.returncode == 0
        _quiet(done)
    time.sleep(1.0)
    assert list(runtime.iterdir()) == []


def test_a_client_without_the_users_key_is_refused_and_the_standby_serves_on(laptop):
    """Another user can name the pipe but cannot read the key: the challenge refuses them; the standby still
    answers this user's next check."""
    env, runtime = laptop
    assert mha(REFERENCE, env=env).returncode == 0
    _listening(runtime, 1)
    probe = ("import sys\nfrom multiprocessing.connection import Client, AuthenticationError\n"
             "from grader.warm import place\n"
             "family = place.relay_family()\n"
             "address = place.relay_address(place.private_folder(create=False), place.server_key(), family)\n"
             "try:\n    Client(address, family, authkey=b'not the key').close()\n    print('admitted')\n"
             "except (AuthenticationError, EOFError, OSError) as refused:\n    print('refused', type(refused).__name__)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=60,
                          cwd=PROJECT)
    assert done.stdout.startswith("refused"), done.stdout + done.stderr
    served = mha(REFERENCE, env=env)
    assert served.returncode == 0 and warm_logs.served(runtime) == 1, warm_logs.log(runtime)


def _interrupted(env: dict) -> tuple[int, str, float]:
    """``mha check`` of a hang under call limits long enough that only Ctrl-C ends it soon: its status,
    stderr, and the seconds it took to end after Ctrl-C."""
    client = subprocess.Popen([str(MHA), "check", str(HANG), "--timeout-scale", "50"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env, cwd=PROJECT, text=True)
    time.sleep(4.0)
    assert client.poll() is None, "the check ended before Ctrl-C"
    client.send_signal(signal.SIGINT)
    sent = time.monotonic()
    _, err = client.communicate(timeout=120)
    return client.returncode, err, time.monotonic() - sent


def test_ctrl_c_in_the_student_terminal_stops_the_served_check(laptop):
    """Ctrl-C in a served check stops it there at once, and the student reads what a cold check's Ctrl-C says."""
    env, runtime = laptop
    assert mha(REFERENCE, env=env).returncode == 0
    _listening(runtime, 1)
    served = _interrupted(env)
    assert warm_logs.served(runtime) == 1, warm_logs.log(runtime)
    cold = _interrupted({**env, "MHA_CHECK_SERVER": "off"})
    assert served[:2] == cold[:2] == (1, "\nAborted!\n"), (served, cold)
    assert served[2] < 10, f"the served check took {served[2]:.1f} s to stop"


def test_an_idle_standby_ends_and_leaves_no_socket(laptop):
    env, runtime = laptop
    env = {**env, "MHA_CHECK_SERVER_IDLE": "2"}
    assert mha(REFERENCE, env=env).returncode == 0
    _listening(runtime, 1)  # and the one behind it, warming or waiting in line
    deadline = time.monotonic() + 60
    while _standbys(runtime) or list(runtime.glob("*.starting-*")):
        assert time.monotonic() < deadline, f"the idle standbys did not end: {warm_logs.log(runtime)}"
        time.sleep(0.2)
    assert not list(runtime.glob("*.address"))
    sockets = [path for path in Path(env.get("MHA_EMULATED_PIPES", runtime)).iterdir() if path.is_socket()]
    assert sockets == []


def test_local_peercred_is_read_as_macos_gives_it():
    """``struct xucred`` (LOCAL_PEERCRED's answer): the uid after the version; another version is refused."""
    import struct

    from grader.warm.place import XUCRED, xucred_uid

    assert xucred_uid(struct.pack(XUCRED, 0, 501, 1, 20, *([0] * 15))) == 501
    with pytest.raises(ValueError):
        xucred_uid(struct.pack(XUCRED, 7, 501, 1, 20, *([0] * 15)))
