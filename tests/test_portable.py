"""`mha check` on every student's laptop: Windows (emulated), non-root Linux, root without CAP_SYS_ADMIN.

Each test runs the installed command as a student would. Windows is emulated
by ``tests/emulation/sitecustomize.py`` (the POSIX-only modules and calls
gone, in the grader's process and in its workers), which leaves the portable
worker as the only way to run the code.
"""

import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest

from conftest import FIXTURES, PROJECT, mutants, require

EMULATION = PROJECT / "tests" / "emulation" / "sitecustomize.py"
MHA = Path(sys.executable).parent / "mha"
REFERENCE = PROJECT / "solutions" / "multihead_attention.py"
MISTAKE = mutants("multihead_attention") / "mistakes" / "split_heads_no_transpose.py"
HANG = FIXTURES / "hangs" / "softmax_while_true.py"
LEAVES_CHILDREN = FIXTURES / "laptops" / "leaves_children.py"
ESCAPES_SESSION = FIXTURES / "laptops" / "escapes_session.py"
MARKER = "mha-portable-leftover"
STUDENT = "mha-laptop"  # the non-root user the tests create


def mha(*args, env: dict | None = None, prefix: tuple = (), timeout: float = 180) -> subprocess.CompletedProcess:
    require(MHA.is_file(), f"the mha command is not installed beside {sys.executable} (pip install -e .)")
    return subprocess.run([*prefix, str(MHA), *map(str, args)], capture_output=True, text=True, env=env,
                          timeout=timeout, cwd=(env or {}).get("HOME"))


def run(command: tuple, *args, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([*command, *map(str, args)], capture_output=True, text=True, env=env, timeout=180,
                          cwd=env["HOME"])


def assert_quiet(done: subprocess.CompletedProcess) -> None:
    """Nothing that looks like an error unless the code has one: no traceback, no Python warning, and nothing at
    all on stderr (the report is on stdout; a student's own output too)."""
    assert done.stderr == "", done.stderr[-3000:]
    for stream in (done.stdout, done.stderr):
        assert "Traceback" not in stream, stream[-3000:]
        assert "Warning" not in stream and "warnings.warn" not in stream, stream[-3000:]


def json_of(done: subprocess.CompletedProcess) -> dict:
    try:
        return json.loads(done.stdout)
    except ValueError:
        raise AssertionError(f"no JSON result: {done.stdout[-2000:]}\n{done.stderr[-3000:]}") from None


def findings(result: dict) -> list[tuple]:
    """What a student reads of each check: its name, outcome, diagnosis and message, rounding aside (a
    difference of 1e-7 or 0 is the worker's own arithmetic: NumPy's summation order follows where an array
    happens to be aligned in that process, so two processes may round differently)."""
    return [(test["name"], test["outcome"], test["misconception"], ROUNDING.sub("<tiny>", test["message"]))
            for test in result["tests"]]


# a difference below 1e-5 as messages print it ("largest difference 0", "... 1.65e-07"): rounding, not a finding
ROUNDING = re.compile(r"(?<=difference )(?:0|\d(?:\.\d+)?e-(?:0[5-9]|[1-9]\d))\b")


# ---- Windows, emulated ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def windows(tmp_path_factory) -> dict:
    """The environment of a Python with Windows's import surface: the grader and its workers."""
    folder = tmp_path_factory.mktemp("windows")
    wrapper = folder / "python"  # what sys.executable becomes: the worker, with the same surface removed
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -I -S "{EMULATION}" "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    home = folder / "home"
    home.mkdir()
    return dict(os.environ, PYTHONPATH=str(EMULATION.parent), MHA_EMULATED_EXECUTABLE=str(wrapper),
                HOME=str(home), MHA_ISOLATION="auto")


def test_the_emulated_windows_lacks_the_posix_surface_and_keeps_what_students_use(windows):
    probe = """
import importlib, os, select, signal, socket, subprocess, sys
missing = []
for name in ("fcntl", "resource", "termios", "pwd", "grp"):
    try:
        importlib.import_module(name)
    except ImportError:
        missing.append(name)
calls = [name for module, name in ((os, "fork"), (os, "setsid"), (os, "getuid"), (os, "killpg"), (os, "pipe2"),
         (socket, "AF_UNIX"), (signal, "SIGKILL")) if hasattr(module, name)]
reader, writer = os.pipe()
try:
    select.select([reader], [], [], 0)
    pipes = "selectable"
except OSError:
    pipes = "refused"
import numpy, pytest, click, rich
child = subprocess.run([sys.executable, "-c", "import fcntl"], capture_output=True, text=True)
print(missing, calls, pipes, "ModuleNotFoundError" in child.stderr, float(numpy.ones(3).sum()))
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=windows, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["['fcntl',", "'resource',", "'termios',", "'pwd',", "'grp']", "[]", "refused",
                                   "True", "3.0"]


def test_emulated_windows_passes_correct_code_in_the_portable_worker(windows):
    done = mha("check", REFERENCE, "--json", env=windows)
    result = json_of(done)
    assert done.returncode == 0, done.stderr
    assert result["score"] == result["max_score"] > 0
    assert result["isolation"].startswith("portable worker")
    assert "no rlimits" in result["isolation"] and "memory watchdog" in result["isolation"]
    assert_quiet(done)


def test_emulated_windows_names_a_planted_mistake_as_linux_does(windows):
    portable = mha("check", MISTAKE, "--json", env=windows)
    linux = mha("check", MISTAKE, "--json", "--isolation", "linux")
    assert portable.returncode == linux.returncode == 1
    assert "split-heads-no-transpose" in json_of(portable)["misconceptions"]
    assert findings(json_of(portable)) == findings(json_of(linux))  # same checks, diagnosis and messages
    assert_quiet(portable)
    text = mha("check", MISTAKE, env=windows)
    assert text.returncode == 1 and "split_heads" in text.stdout
    assert "Isolation" not in text.stdout  # behind --verbose only
    assert_quiet(text)


def test_emulated_windows_stops_a_hang_in_seconds(windows, tmp_path):
    temporary = tmp_path / "temp"  # where the workers' scratch folders go
    temporary.mkdir()
    started = time.monotonic()
    done = mha("check", HANG, "--json", env=dict(windows, TMPDIR=str(temporary)))
    took = time.monotonic() - started
    result = json_of(done)
    assert done.returncode == 1
    softmax = [test for test in result["tests"] if test["function"] == "softmax"]
    assert softmax and {test["outcome"] for test in softmax} == {"timeout"}
    assert any(test["outcome"] == "passed" for test in result["tests"])  # the other functions keep their points
    assert took < 30, f"the hang took {took:.1f} s to settle"
    assert not list(temporary.iterdir())  # every worker's folder removed, the hung one's and the spares' too
    assert_quiet(done)


def test_emulated_windows_ends_the_processes_a_hanging_call_started(windows):
    started = time.time()
    done = mha("check", LEAVES_CHILDREN, "--json", "--function", "softmax", env=windows)
    assert done.returncode == 1
    assert {test["outcome"] for test in json_of(done)["tests"]} == {"timeout"}
    # the child as a descendant; the orphaned grandchild (no process group on Windows) by its environment
    assert leftovers(since=started, kill=True) == 0
    assert_quiet(done)


def test_emulated_windows_draws_the_students_heads_in_the_portable_worker(windows, tmp_path):
    done = mha("viz", MISTAKE, "--out", tmp_path / "heads.png", env=windows)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "differs from the reference" in done.stdout  # the student's forward ran, in a worker
    assert (tmp_path / "heads.png").stat().st_size > 10_000
    assert_quiet(done)


def test_emulated_windows_checks_a_file_as_notepad_saves_it_in_a_chinese_home(windows, tmp_path):
    """C:\\Users\\张三\\作业 一: a folder name with spaces and Chinese; the file with CRLF line endings and a
    UTF-8 BOM (what Notepad writes), or in GBK (what an older editor writes there): an answer, not a traceback."""
    folder = tmp_path / "Users" / "张三" / "作业 一"
    folder.mkdir(parents=True)
    source = REFERENCE.read_text(encoding="utf-8")
    (folder / "我的 作业.py").write_text(source, encoding="utf-8-sig", newline="\r\n")
    (folder / "gbk.py").write_bytes(("# 张三的作业\n" + source).encode("gbk"))
    env = dict(windows, HOME=str(folder))
    done = mha("check", "我的 作业.py", "--json", env=env)
    result = json_of(done)
    assert done.returncode == 0 and result["score"] == result["max_score"] > 0, done.stderr[-3000:]
    assert_quiet(done)
    gbk = mha("check", "gbk.py", "--lang", "zh", env=env)
    assert gbk.returncode == 1 and "gbk.py 不是 UTF-8 文本" in gbk.stdout and "UTF-8 编码保存" in gbk.stdout
    assert_quiet(gbk)


@pytest.mark.parametrize("cache", ["unusable", "shared"])
def test_two_checks_at_once_both_answer_whatever_the_cache_folder(windows, tmp_path, cache):
    """A second `mha check` typed while the first runs, with a cache folder that cannot be made (under a file:
    a read-only or broken profile) or one both fill at once from empty: two full, quiet answers."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    folder = blocker / "cache" if cache == "unusable" else tmp_path / "cache"
    env = dict(windows, MHA_CACHE_DIR=str(folder))
    command = [str(MHA), "check", str(REFERENCE), "--json"]
    running = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                cwd=env["HOME"]) for _ in range(2)]
    for process in running:
        out, err = process.communicate(timeout=180)
        done = subprocess.CompletedProcess(command, process.returncode, out, err)
        result = json_of(done)
        assert done.returncode == 0 and result["score"] == result["max_score"] > 0, err[-3000:]
        assert_quiet(done)


def test_emulated_windows_runs_the_notebooks_check_in_a_real_kernel(windows, tmp_path):
    """The kernel itself has Windows's import surface: check() passes correct code, names a planted mistake,
    stops a hang in seconds, and writes nothing to stderr (no warning, no traceback)."""
    from jupyter_client.manager import start_new_kernel

    manager, client = start_new_kernel(kernel_name="python3", cwd=str(tmp_path),
                                       env=dict(windows, MHA_CACHE_DIR=str(tmp_path / "cache")))
    errors = []

    def run(code: str) -> str:
        shown = []
        reply = client.execute_interactive(code, timeout=180, output_hook=shown.append)
        assert reply["content"]["status"] == "ok", reply["content"]
        errors.extend(message["content"]["text"] for message in shown
                      if message["msg_type"] == "stream" and message["content"]["name"] == "stderr")
        return "".join(str(message["content"].get("data", {}).get("text/html", "")
                           or message["content"].get("text", "")) for message in shown)

    try:
        assert run("import os, socket\nprint(hasattr(os, 'fork'), hasattr(socket, 'AF_UNIX'))").split() == \
            ["False", "False"]  # the emulation holds in the kernel
        run(REFERENCE.read_text(encoding="utf-8"))
        run("from grader import check")
        assert "data-passed='true'" in run("check()")
        assert run("print(check().result.isolation)").startswith("portable worker")
        run(MISTAKE.read_text(encoding="utf-8"))
        assert "data-misconception='split-heads-no-transpose'" in run("check('split_heads')")
        run("def softmax(x, axis=-1):\n    while True:\n        pass")
        started = time.monotonic()
        shown = run("check('softmax')")
        assert time.monotonic() - started < 30
        assert "data-outcome='timeout'" in shown and "data-outcome='passed'" not in shown
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    assert not "".join(errors).strip(), errors


def test_grade_refuses_the_portable_worker_unless_asked(windows, tmp_path):
    submissions = tmp_path / "class"
    submissions.mkdir()
    shutil.copy(REFERENCE, submissions / "ada.py")
    done = mha("grade", submissions, "--out", tmp_path / "out", env=windows)
    assert done.returncode == 2
    assert "Linux sandbox" in done.stderr and "--isolation portable" in done.stderr
    assert "does not protect this machine from hostile code" in done.stderr
    assert not (tmp_path / "out" / "results.json").exists()


def leftovers(*, since: float, kill: bool = False) -> int:
    """How many processes carrying the fixture's marker, started after ``since``, are alive (and kill them)."""
    time.sleep(0.3)  # a kill is delivered at once, but the process table may lag a moment
    found = []
    for process in psutil.process_iter(["cmdline", "create_time"]):
        if MARKER in (process.info["cmdline"] or []) and process.info["create_time"] >= since - 1:
            found.append(process)
    if kill:
        for process in found:
            process.kill()
    return len(found)


def test_a_pipe_whose_encoding_has_no_check_mark_still_gets_the_report():
    """Windows gives a pipe or a file its ANSI code page (no ✓, no Chinese); an ASCII locale does the same
    here. The report comes in UTF-8 instead of a UnicodeEncodeError."""
    env = dict(os.environ, LC_ALL="POSIX", PYTHONCOERCECLOCALE="0", PYTHONUTF8="0")
    env.pop("PYTHONIOENCODING", None)
    done = subprocess.run([str(MHA), "check", str(MISTAKE), "--lang", "zh"], capture_output=True, env=env,
                          timeout=180)
    assert done.returncode == 1, done.stderr.decode("utf-8", "replace")[-2000:]
    text = done.stdout.decode("utf-8")
    assert "✓" in text and "split_heads" in text and "UnicodeEncodeError" not in done.stderr.decode("utf-8")


@pytest.mark.parametrize("encoding", ["gbk", "cp936"])
def test_a_console_set_to_the_chinese_code_page_gets_the_report_in_it(encoding):
    """PYTHONIOENCODING=gbk (a Chinese Windows console's code page, kept as asked): its Chinese is written in it,
    and the marks GBK lacks (✓ ✗ ◷) as the nearest marks it has, instead of a UnicodeEncodeError."""
    env = dict(os.environ, PYTHONIOENCODING=encoding)
    done = subprocess.run([str(MHA), "check", str(HANG), "--lang", "zh"], capture_output=True, env=env, timeout=180)
    errors = done.stderr.decode(encoding, "replace")
    assert done.returncode == 1 and "Traceback" not in errors and "UnicodeEncodeError" not in errors, errors[-2000:]
    text = done.stdout.decode(encoding)  # strict: every byte is the code page's
    assert "通过" in text and "softmax" in text
    assert "√" in text and "\\u" not in text  # a mark of its own, not an escape
    explicit = subprocess.run([str(MHA), "check", str(REFERENCE)], capture_output=True, timeout=180,
                              env=dict(env, PYTHONIOENCODING=f"{encoding}:replace"))
    assert explicit.returncode == 0 and b"?" in explicit.stdout  # an error handler asked for is kept too


def test_a_terminal_that_is_not_utf8_gets_the_nearest_marks_it_has():
    """A terminal in an ASCII locale (an old console, a bare SSH session): the report as it can show it."""
    import pty

    env = dict(os.environ, LC_ALL="POSIX", PYTHONCOERCECLOCALE="0", PYTHONUTF8="0", COLUMNS="100")
    env.pop("PYTHONIOENCODING", None)
    leader, follower = pty.openpty()
    try:
        process = subprocess.Popen([str(MHA), "check", str(MISTAKE)], stdout=follower, stderr=follower, env=env)
        os.close(follower)
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal's other end closed: the command ended
                break
            if not chunk:
                break
            shown += chunk
        assert process.wait(timeout=180) == 1
    finally:
        os.close(leader)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown.decode("ascii"))  # every byte one the terminal has
    assert "Traceback" not in text and "\\u" not in text  # no escapes: the marks, the spinner
    assert re.search(r"\bv passed", text) and re.search(r"\bx failed", text)


# ---- the portable worker on Linux (asked for) ----------------------------------------------------------
def test_the_portable_worker_ends_its_whole_process_group_after_a_hang():
    started = time.time()
    done = mha("check", LEAVES_CHILDREN, "--json", "--function", "softmax", "--isolation", "portable")
    assert done.returncode == 1
    assert {test["outcome"] for test in json_of(done)["tests"]} == {"timeout"}
    assert leftovers(since=started, kill=True) == 0  # the child and the orphaned grandchild: its process group
    assert_quiet(done)


def test_the_portable_worker_ends_an_orphan_that_left_its_session():
    """What macOS has (no PID namespace, no cgroup): a grandchild in a session of its own, its parent gone, is
    in neither the worker's process group nor its descendants; the token its environment inherited finds it."""
    started = time.time()
    done = mha("check", ESCAPES_SESSION, "--json", "--function", "softmax", "--isolation", "portable")
    assert done.returncode == 1
    assert {test["outcome"] for test in json_of(done)["tests"]} == {"timeout"}
    assert leftovers(since=started, kill=True) == 0
    assert_quiet(done)


def test_grading_with_the_portable_worker_when_asked_says_it_does_not_protect(tmp_path):
    submissions = tmp_path / "class"
    submissions.mkdir()
    shutil.copy(REFERENCE, submissions / "ada.py")
    shutil.copy(MISTAKE, submissions / "ben.py")
    done = mha("grade", submissions, "--out", tmp_path / "out", "--isolation", "portable", "--jobs", "1")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "does not protect this machine from hostile code" in done.stderr
    results = {result["student"]: result for result in json.loads((tmp_path / "out" / "results.json").read_text())}
    assert results["ada"]["score"] == results["ada"]["max_score"]
    assert "split-heads-no-transpose" in results["ben"]["misconceptions"]
    for result in results.values():
        assert result["isolation"].startswith("portable worker") and "WARNING" in result["isolation"]
    assert "portable worker" in done.stdout  # the summary's isolation line


# ---- Linux without root, and root without CAP_SYS_ADMIN ---------------------------------------------------
def setpriv_available() -> bool:
    return os.geteuid() == 0 and shutil.which("setpriv") is not None


@pytest.fixture(scope="module")
def student_home():
    """A non-root user (made here) with a home of its own, holding copies of the files it checks, and the
    ``mha`` command it runs (``student_command``)."""
    require(setpriv_available(), "these tests run as root with setpriv (util-linux)")
    made_user = False
    try:
        pwd.getpwnam(STUDENT)
    except KeyError:
        subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", STUDENT], check=True)
        made_user = True
    user = pwd.getpwnam(STUDENT)
    home = Path(tempfile.mkdtemp(prefix="mha-laptop-home-"))
    for path in (REFERENCE, MISTAKE):
        shutil.copy(path, home / path.name)
    for path in (home, *home.iterdir()):
        os.chown(path, user.pw_uid, user.pw_gid)
    home.chmod(0o755)
    made = Path(tempfile.mkdtemp(prefix="mha-laptop-venv-"))  # for a venv of its own, if it needs one
    site_packages = [path for path in map(Path, sys.path) if path.name == "site-packages"]
    opened = traversable(PROJECT, *site_packages)
    yield home, user, student_command(user, made)
    for folder, mode in opened:
        folder.chmod(mode)
    shutil.rmtree(home, ignore_errors=True)
    shutil.rmtree(made, ignore_errors=True)
    if made_user:
        subprocess.run(["userdel", STUDENT], check=False)


def traversable(*paths: Path) -> list[tuple[Path, int]]:
    """Let any user pass through the folders above ``paths`` (the checkout and its venv may sit in a folder
    only root can enter, e.g. a clone under ``mktemp -d``): each one lacking the others' search bit gets it
    until the test ends; returns the folders changed with their old modes. Nothing is made readable."""
    changed = []
    for path in paths:
        for folder in (path, *path.parents):
            if folder.is_dir() and not folder.stat().st_mode & 0o001 and folder not in dict(changed) \
                    and not str(folder).startswith("/root"):  # /root stays closed: the test reaches no interpreter there
                changed.append((folder, folder.stat().st_mode & 0o7777))
                folder.chmod(folder.stat().st_mode | 0o001)
    return changed


def as_user(user) -> tuple:
    return ("setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups", "--")


def student_command(user, folder: Path) -> Path:
    """The installed ``mha`` if the user can run its interpreter; else one in a venv of a system interpreter of
    the same version, which reads this environment's packages (an interpreter under /root is out of reach)."""
    # through env: setpriv's own exec still resolves the path with root's rights, the next ones do not
    if subprocess.run([*as_user(user), "env", str(MHA), "--help"], capture_output=True).returncode == 0:
        return MHA
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    system = shutil.which(version, path="/usr/bin:/usr/local/bin:/bin")
    require(system is not None, f"no {version} outside /root that a non-root user can run")
    folder.chmod(0o755)
    subprocess.run([system, "-m", "venv", "--without-pip", str(folder / "venv")], check=True)
    site_packages = next((folder / "venv" / "lib").glob("python3*/site-packages"))
    here = next(path for path in map(Path, sys.path) if path.name == "site-packages" and (path / "numpy").is_dir())
    (site_packages / "environment.pth").write_text(f"import site; site.addsitedir({str(here)!r})\n")
    command = folder / "venv" / "bin" / "mha"
    command.write_text(f"#!{folder / 'venv' / 'bin' / 'python'}\nimport sys\nfrom grader.cli import main\n"
                       "sys.exit(main())\n")
    command.chmod(0o755)
    return command


def as_student(home: Path, user, command: Path) -> tuple[dict, tuple]:
    env = {"PATH": f"{command.parent}:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8",
           "MHA_CONFIG_DIR": str(home / ".config" / "mha")}
    return env, (*as_user(user), str(command))


def test_a_non_root_student_gets_a_quiet_correct_check(student_home):
    home, user, command = student_home
    env, prefix = as_student(home, user, command)
    good = run(prefix, "check", home / REFERENCE.name, "--json", env=env)
    result = json_of(good)
    assert good.returncode == 0, good.stderr[-3000:]
    assert result["score"] == result["max_score"]
    assert result["isolation"] and f"uid {user.pw_uid}" in result["isolation"]  # what ran it: in --json
    assert_quiet(good)
    bad = run(prefix, "check", home / MISTAKE.name, "--verbose", env=env)
    assert bad.returncode == 1 and "split_heads" in bad.stdout
    assert "Isolation:" in bad.stdout  # and behind --verbose
    assert_quiet(bad)


def test_root_without_cap_sys_admin_gets_a_quiet_correct_check(tmp_path):
    require(setpriv_available(), "this test runs as root with setpriv (util-linux)")
    shutil.copy(MISTAKE, tmp_path / "mine.py")
    prefix = ("setpriv", "--bounding-set", "-sys_admin", "--inh-caps", "-sys_admin", "--")
    env = dict(os.environ, HOME=str(tmp_path))
    good = mha("check", REFERENCE, "--json", env=env, prefix=prefix)
    result = json_of(good)
    assert good.returncode == 0, good.stderr[-3000:]
    assert result["score"] == result["max_score"]
    assert "namespaces" not in result["isolation"].split(";")[0]  # unshare was refused: no namespace held
    assert_quiet(good)
    bad = mha("check", tmp_path / "mine.py", "--json", env=env, prefix=prefix)
    assert bad.returncode == 1 and "split-heads-no-transpose" in json_of(bad)["misconceptions"]
    assert_quiet(bad)


# ---- the portable worker's parts, through the sandbox's own calls -------------------------------------------
HOARDS = FIXTURES / "laptops" / "hoards_memory.py"


@pytest.mark.parametrize("without, expected", [((), "MemoryError"), (("rlimit_as",), "MiB together")],
                         ids=["rlimit", "watchdog"])
def test_memory_over_the_limit_is_refused_by_the_rlimit_or_ended_by_the_watchdog(without, expected):
    """Where POSIX enforces RLIMIT_AS the call gets a MemoryError; elsewhere (Windows, macOS: here the rlimit
    left out) the watchdog ends the tree and says which limit."""
    import numpy as np

    from grader.sandbox.client import Limits, Sandbox, start_server

    server = start_server(isolation="portable", without=without)
    try:
        with Sandbox.open(path=HOARDS, limits=Limits(memory_mb=1024, call_timeout=30), server=server) as box:
            assert box.load_report.ok, box.load_report
            x = np.ones((2, 3, 5, 4))
            hoarding = box.call("scaled_dot_product_attention", x, x, x)
            after = box.call("softmax", x)  # a fresh worker answers the next call
    finally:
        server.stop()
    assert hoarding.error is not None, hoarding
    assert expected in f"{hoarding.error.type}: {hoarding.error.message}"
    assert after.ok and np.allclose(after.value.sum(axis=-1), 1.0)


def test_auto_falls_back_to_the_portable_worker_and_linux_refuses(monkeypatch):
    from grader.sandbox import servers
    from grader.sandbox.link import ForkServer, ForkServerError
    from grader.sandbox.portable import PortableServer

    def refused(**options):
        raise ForkServerError("the fork server did not start: SOCK_SEQPACKET is not supported")

    monkeypatch.setattr(ForkServer, "start", classmethod(lambda cls, **options: refused()))
    server = servers.open_server(isolation="auto", spares=0)
    assert isinstance(server, PortableServer) and "SOCK_SEQPACKET" in server.reason
    with pytest.raises(ForkServerError):
        servers.open_server(isolation="linux")
    monkeypatch.setattr(servers, "linux_missing", lambda: "macOS has neither Landlock nor Linux namespaces")
    with pytest.raises(ForkServerError, match="macOS"):
        servers.open_server(isolation="linux")
    attached = PortableServer.attach(server.address)  # what a grading lane rebuilds from the run's address
    assert (attached.numpy_dir, attached.packages, attached.spares) == (server.numpy_dir, server.packages, 0)


def test_the_isolation_comes_from_the_option_or_the_environment(monkeypatch):
    from grader.sandbox.servers import chosen_isolation

    monkeypatch.setenv("MHA_ISOLATION", "portable")
    assert chosen_isolation() == "portable" and chosen_isolation("linux") == "linux"
    monkeypatch.setenv("MHA_ISOLATION", "docker")
    with pytest.raises(ValueError, match="MHA_ISOLATION"):
        chosen_isolation()


def test_the_windows_job_structures_have_the_kernels_layout_and_no_job_is_made_elsewhere():
    """JOBOBJECT_EXTENDED_LIMIT_INFORMATION is 144 bytes on 64-bit Windows (64 of basic limits, 48 of I/O
    counters, four sizes): a layout off by a field makes SetInformationJobObject refuse it there."""
    import ctypes

    from grader.sandbox import windows_job

    if sys.maxsize > 2**32:
        assert ctypes.sizeof(windows_job._BasicLimits) == 64
        assert ctypes.sizeof(windows_job._IoCounters) == 48
        assert ctypes.sizeof(windows_job._ExtendedLimits) == 144
        assert windows_job._ExtendedLimits.JobMemoryLimit.offset == 120
    assert windows_job.WindowsJob.make(memory_mb=64, max_processes=8) is None  # not Windows: psutil and the watchdog


def fragile(path: Path, check: str) -> bool:
    """A float32 submission on the checks of scores near +-1000: there one rounding of a score moves its output
    by whole units, and two processes round differently (their arrays sit at other alignments), so which twin
    its output matches follows the process, not the worker's kind. Every other finding must be the same."""
    return "large_scores" in check and "float32" in path.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def both_workers():
    from grader.sandbox.client import start_server

    servers = {isolation: start_server(isolation=isolation) for isolation in ("linux", "portable")}
    yield servers
    for server in servers.values():
        server.stop()


@pytest.mark.slow
def test_every_mistake_of_the_library_gets_the_same_findings_from_both_workers(both_workers):
    """Same checks, same diagnosis, same messages: the whole mutant library, hidden checks included."""
    from grader.authoring.audit import library_modules
    from grader.grading.grade import grade_submission

    library = library_modules(mutants("multihead_attention"))
    assert len(library) > 30
    for path, expected in library:
        # limits of ten times the calibrated ones: on a loaded machine a call or a twin run near its limit would
        # end one way in one worker and the other way in the other, which is the machine, not the worker
        results = {isolation: grade_submission(path=path, visibility="all", server=server, student="ada",
                                               timeout_scale=10).to_dict()
                   for isolation, server in both_workers.items()}
        portable, linux = findings(results["portable"]), findings(results["linux"])
        assert [item[:2] for item in portable] == [item[:2] for item in linux], path.name  # every check's outcome
        differing = [(mine, theirs) for mine, theirs in zip(portable, linux) if mine != theirs]
        assert all(fragile(path, mine[0]) for mine, _ in differing), (path.name, differing)
        assert results["portable"]["score"] == results["linux"]["score"], path.name
        assert results["portable"]["isolation"].startswith("portable worker"), path.name
