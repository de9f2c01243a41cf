"""Hostile submissions, one per attack class: each ends with its honest score and never harms the grader.

"Honest score" is what the same submission earns with the attack taken out:
0 when there is no honest work, else the score of a control submission that
does the same honest work (an honest softmax, answers of no use, ...), test by
test. Every attack is graded with ``grade_submission`` through a shared fork
server (small limits keep it fast), and the ones that need no timeout also
through ``mha check FILE --json`` (CliRunner, and once the installed command).
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import FIXTURES, PROJECT, require
from grader.cli import root
from grader.grading.grade import grade_submission
from grader.sandbox import link
from grader.sandbox.client import Limits, start_server
from grader.sandbox.source import Cell, SubmissionSource

HOSTILE = FIXTURES / "hostile"
LIMITS = Limits(call_timeout=0.75, submission_timeout=8.0, memory_mb=512, cpu_seconds=10, max_processes=64,
                max_restarts=1)
NETWORK_PORT = 47613  # the port network.py tries

NO_USE = '''
def softmax(x):
    return None

def scaled_dot_product_attention(Q, K, V):
    return None, None

class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        pass

    def split_heads(self, x):
        return None

    def combine_heads(self, x):
        return None

    def forward(self, Q, K, V, return_weights=False):
        return (None, None) if return_weights else None
'''
HONEST_SOFTMAX = (HOSTILE / "honest_softmax_only.py").read_text()


@dataclass(frozen=True)
class Attack:
    """What an attack must come to: its status, and the control whose score and passing tests it must equal."""

    status: str = "graded"
    control: str | None = None  # source of the control; None: no honest work, score 0
    error: str = ""  # a phrase the load error contains
    cli: bool = True  # fast enough for the command line's default limits


def without_attack(name: str) -> str:
    """The fixture with its ``# BEGIN ATTACK`` ... ``# END ATTACK`` block taken out."""
    return re.sub(r"# BEGIN ATTACK.*?# END ATTACK\n", "", (HOSTILE / f"{name}.py").read_text(), flags=re.S)


ATTACKS = {
    "always_equal": Attack(control=NO_USE),
    "monkeypatch_numpy": Attack(control=without_attack("monkeypatch_numpy")),
    "exit_at_import": Attack(status="error", error="SystemExit"),
    "os_exit_at_import": Attack(status="error", error="exited with status 3"),
    "exit_in_function": Attack(control=HONEST_SOFTMAX, cli=False),
    "infinite_loop": Attack(cli=False),
    "sleep_at_import": Attack(status="error", error="took too long", cli=False),
    "memory_bomb": Attack(cli=False),
    "fork_bomb": Attack(),
    "kill_parent": Attack(),
    "fake_output": Attack(),
    "write_outside": Attack(),
    "steal_reference": Attack(),
    "daemon": Attack(),
    "odd_arrays": Attack(control=HONEST_SOFTMAX.replace("import numpy as np", "import numpy as np\n" + NO_USE.replace(
        "def softmax(x):\n    return None\n", ""))),
    "deep_recursion": Attack(),
    "enormous_output": Attack(),
    "network": Attack(),
    "forged_replies": Attack(cli=False),
    "stop_reading": Attack(cli=False),
    # the right answers a stand-in gave (to inputs it chose: those of checks still to come) reach no later call
    "keep_stand_in_answers": Attack(control=without_attack("keep_stand_in_answers")),
}


@pytest.fixture(scope="module")
def server():
    shared = start_server()
    yield shared
    shared.stop()


def graded(path: Path, server, **options):
    return grade_submission(path=path, limits=LIMITS, server=server, **options)


def passed(result) -> set[str]:
    return {test.name for test in result.tests if test.outcome == "passed"}


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


def control_result(control: str, server):
    source = SubmissionSource(cells=(Cell(control, "control.py", "control.py"),), mode="module")
    return grade_submission(source=source, limits=LIMITS, server=server)


def test_every_attack_has_a_fixture_and_every_fixture_an_attack():
    fixtures = {path.stem for path in HOSTILE.glob("*.py")} - {"honest_softmax_only"}
    assert fixtures == set(ATTACKS)


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_attack_ends_with_its_honest_score(name, server):
    attack = ATTACKS[name]
    started = time.monotonic()
    result = graded(HOSTILE / f"{name}.py", server)
    assert time.monotonic() - started < LIMITS.submission_timeout + 5
    assert result.status == attack.status, result.error
    assert attack.error in (result.error or "")
    if attack.control is None:
        assert result.score == 0.0 and passed(result) == set(), passed(result)
    else:
        control = control_result(attack.control, server)
        assert control.status == "graded"
        assert (result.score, passed(result)) == (control.score, passed(control))
    assert result.max_score == 44.0
    assert server.process.poll() is None, "the attack ended the fork server"


def test_values_that_are_not_plain_arrays_are_wrong_type(server):
    result = graded(HOSTILE / "always_equal.py", server)
    value_checks = [test for test in result.tests if "unchanged" not in test.name and test.function != "__init__"]
    assert value_checks and all(test.outcome == "failed" for test in value_checks)
    assert {test.misconception for test in value_checks if test.function in ("softmax", "split_heads",
                                                                              "scaled_dot_product_attention")} == {"wrong-type"}
    odd = graded(HOSTILE / "odd_arrays.py", server)
    softmax_checks = [test for test in odd.tests if test.function == "softmax"]
    assert all(test.outcome == "passed" for test in softmax_checks)  # a strided view of the right numbers is right
    by_function = {test.function: test.misconception for test in odd.tests if test.outcome == "failed"}
    assert by_function["split_heads"] == by_function["combine_heads"] == "wrong-type"


def test_daemons_and_forked_children_are_dead_after_grading(server):
    graded(HOSTILE / "daemon.py", server)
    graded(HOSTILE / "fork_bomb.py", server)
    # each worker's end is settled later (its keeper's report read on the next start or at the end): at most
    # CLOSING_HELD wait, and once settled nothing the submissions started is left
    assert server.pool.waiting <= link.CLOSING_HELD
    server.pool.settle()
    assert server.pool.waiting == 0
    assert processes_named("mha-hostile-dmn") == []
    assert processes_named("mha-hostile-frk") == []


def test_nothing_is_written_outside_the_scratch_folder(server, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.json").write_text('[{"student": "alice", "score": 44.0}]')
    before = (out / "results.json").read_text()
    marker = "mha-hostile-was-here"
    result = graded(HOSTILE / "write_outside.py", server)
    message = result.tests[0].message
    written = ast.literal_eval(message.split("wrote ", 1)[1])
    assert all(Path(path).parent.name.startswith("mha-worker-") for path in written), written  # its own scratch only
    assert (out / "results.json").read_text() == before
    for folder in [*HOSTILE.parents, Path("/tmp"), *(top for top in Path("/").iterdir() if top.is_dir())]:
        assert not (folder / f"{marker}.txt").exists(), folder
    assert not list((PROJECT / "grader" / "assignments").glob(f"{marker}*"))


def test_the_reference_and_hidden_tests_cannot_be_found(server):
    result = graded(HOSTILE / "steal_reference.py", server, visibility="all")
    assert result.score == 0.0
    assert "no reference found" in next(test.message for test in result.tests if test.function == "softmax")


def test_no_connection_reaches_the_network(server):
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.bind(("127.0.0.1", NETWORK_PORT))
    except OSError:
        pytest.skip(f"port {NETWORK_PORT} is taken on this machine")
    listener.listen(1)
    listener.settimeout(0.2)
    try:
        result = graded(HOSTILE / "network.py", server)
        with pytest.raises(socket.timeout):
            listener.accept()
    finally:
        listener.close()
    attempts = next(test.message for test in result.tests if test.function == "softmax")
    assert "reached" not in attempts.split("network attempts:")[1][:60], attempts  # the TCP and UDP tries


def test_a_symlink_to_the_reference_is_refused(server, tmp_path):
    link = tmp_path / "alice.py"
    link.symlink_to(PROJECT / "solutions" / "multihead_attention.py")
    result = graded(link, server)
    assert result.status == "error" and result.score == 0.0 and "symbolic link" in result.error


def test_other_students_are_graded_the_same_after_the_attacks(server):
    honest = PROJECT / "solutions" / "multihead_attention.py"
    before = graded(honest, server, student="bob")
    for name in ("kill_parent", "fork_bomb", "monkeypatch_numpy", "daemon", "write_outside", "forged_replies"):
        graded(HOSTILE / f"{name}.py", server, student=name)
    after = graded(honest, server, student="bob")
    assert before.score == after.score == before.max_score
    assert [test.to_dict() for test in before.tests] == [test.to_dict() for test in after.tests]


# ---- through the command line ------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(name for name, attack in ATTACKS.items() if attack.cli))
def test_mha_check_json_gives_the_same_honest_result(name, server):
    outcome = CliRunner().invoke(root, ["check", str(HOSTILE / f"{name}.py"), "--json"])
    assert outcome.exit_code == 1, outcome.output  # checks failed; the grader itself did not
    result = json.loads(outcome.output)
    assert result["score"] == graded(HOSTILE / f"{name}.py", server).score
    assert result["isolation"]
    assert len(outcome.output) < 200_000  # nothing the submission printed reached the grader's output


@pytest.mark.slow
def test_the_installed_command_prints_only_the_true_result():
    mha = shutil.which("mha")
    require(mha is not None, "the mha command is not installed (pip install -e .)")
    done = subprocess.run([mha, "check", str(HOSTILE / "fake_output.py"), "--json"], capture_output=True, text=True,
                          timeout=60)
    result = json.loads(done.stdout)
    assert done.returncode == 1
    assert result["score"] == 0.0 and result["status"] == "graded"
    assert "ALL CHECKS PASSED" not in done.stdout + done.stderr


@pytest.mark.slow
def test_mha_grade_finishes_a_class_with_every_attack_and_keeps_honest_scores(tmp_path, server):
    submissions, out = tmp_path / "class", tmp_path / "out"
    submissions.mkdir()
    shutil.copy(PROJECT / "solutions" / "multihead_attention.py", submissions / "honest.py")
    fast = sorted(name for name, attack in ATTACKS.items() if attack.cli)
    for name in fast:
        shutil.copy(HOSTILE / f"{name}.py", submissions / f"{name}.py")
    outcome = CliRunner().invoke(root, ["grade", str(submissions), "--out", str(out), "--jobs", "2",
                                        "--visibility", "all"])
    assert outcome.exit_code == 0, outcome.output
    results = {result["student"]: result for result in json.loads((out / "results.json").read_text())}
    assert set(results) == {"honest", *fast}
    assert results["honest"]["score"] == results["honest"]["max_score"]
    for name in fast:
        alone = graded(HOSTILE / f"{name}.py", server, visibility="all", student=name)
        assert results[name]["score"] == alone.score, name
    server.pool.settle()  # this process's last workers end on the next start or at exit: now
    assert processes_named("mha-hostile-dmn") == [] and processes_named("mha-hostile-frk") == []


# ---- isolation between workers, and from the host, through the real command line ------------------------
ISOLATION = HOSTILE / "isolation"
REFERENCE = PROJECT / "solutions" / "multihead_attention.py"
# name -> the control whose score the attack must come to: "reference" (a correct submission), or a source
ISOLATION_CONTROLS = {
    "ipc_publisher": "reference",
    "ipc_reader": NO_USE,
    "memory_tree": HONEST_SOFTMAX,
    "scratch_fill": HONEST_SOFTMAX,
    "unix_sockets": NO_USE,
    "system_packages": NO_USE,
}
IPC_KEYS = {0x6D686131, 0x6D686132}  # the ones ipc_publisher.py and ipc_reader.py use


def requires_root_and_namespaces() -> None:
    """These layers need root (namespaces, cgroups): skip with the reason elsewhere, but never in CI."""
    if os.geteuid() != 0:
        if os.environ.get("CI"):
            pytest.fail("CI must run the sandbox tests as root (namespaces, cgroups)")
        pytest.skip("needs root: IPC and mount namespaces and cgroups are root's")


def mha_grade(submissions: Path, out: Path, *options: str) -> subprocess.CompletedProcess:
    """The installed ``mha grade`` (or the same entry point run by this interpreter), on this checkout."""
    import sys

    command = [shutil.which("mha")] if shutil.which("mha") else [sys.executable, "-c", "from grader.cli import main; main()"]
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join([str(PROJECT), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([*command, "grade", str(submissions), "--out", str(out), *options], capture_output=True,
                          text=True, timeout=300, env=environment)


def honest_class(folder: Path, hostile: list[str], copies: int = 2) -> None:
    folder.mkdir()
    for number in range(copies):
        shutil.copy(REFERENCE, folder / f"honest_{number}.py")
    for name in hostile:
        shutil.copy(ISOLATION / f"{name}.py", folder / f"{name}.py")


def results_of(out: Path) -> dict:
    return {result["student"]: result for result in json.loads((out / "results.json").read_text())}


def honest_score(name: str, server) -> float:
    """What the attack ``name`` earns with the attack taken out, graded like the class (every check, its id)."""
    control = ISOLATION_CONTROLS[name]
    if control == "reference":
        return grade_submission(path=REFERENCE, visibility="all", server=server, student=name).max_score
    source = SubmissionSource(cells=(Cell(control, "control.py", "control.py"),), mode="module")
    return grade_submission(source=source, visibility="all", server=server, student=name).score


def message_of(result: dict, function: str) -> str:
    return next(test["message"] for test in result["tests"] if test["function"] == function
                and test["outcome"] != "passed")


def ipc_objects() -> set[tuple[str, int]]:
    """(kind, key) of every System V object on the machine, as ``ipcs`` lists them."""
    listing = subprocess.run(["ipcs"], capture_output=True, text=True, check=True).stdout
    found, kind = set(), ""
    for line in listing.splitlines():
        if line.startswith("------"):
            kind = line.strip("- ").split()[0]
        elif line.startswith("0x"):
            found.add((kind, int(line.split()[0], 16)))
    return found


def worker_cgroups() -> list[str]:
    """Cgroups of workers that outlived them below this process's own cgroups, made by fork servers that have
    ended (a running server's, of another grader on the machine, are its own; a spare's holds its waiting
    worker). Cleaning up after a worker takes the keeper a moment: look for 2 s."""
    deadline = time.monotonic() + 2
    while True:
        left = [folder for folder in _worker_cgroup_folders()
                if not _processes_in(folder) and not _server_running(Path(folder).name)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def _server_running(name: str) -> bool:
    """Whether the fork server a worker cgroup's name gives (``mha-worker-<pid>-<token>``) still runs."""
    server = name.removeprefix("mha-worker-").partition("-")[0]
    if not server.isdigit():
        return False
    try:
        os.kill(int(server), 0)
    except ProcessLookupError:
        return False
    return True


def _processes_in(folder: str) -> str:
    try:
        return Path(folder, "cgroup.procs").read_text().strip()
    except OSError:
        return "gone"  # removed while looking: not left over


def _worker_cgroup_folders() -> list[str]:
    left = []
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, names, path = line.split(":", 2)
        for name in names.split(",") if names else ["unified"]:
            for mount in (Path("/sys/fs/cgroup") / name, Path("/sys/fs/cgroup")):
                folder = mount / path.lstrip("/")
                if folder.is_dir():
                    left += [str(child) for child in folder.glob("mha-worker-*")]
    return sorted(set(left))


def test_a_fork_server_removes_the_cgroups_a_killed_one_left_and_nothing_else(tmp_path):
    """Keepers killed with their server (a machine's processes ended at once) leave their workers' cgroups: the
    next fork server removes the empty ones of servers that are gone, and keeps a live server's, a busy one and
    one made a moment ago."""
    requires_root_and_namespaces()
    from grader.sandbox.worker import cgroups

    gone = _a_dead_pid()
    hierarchies = [Path(hierarchy.folder) for hierarchy in cgroups.discover().hierarchies]  # where the server makes them
    assert hierarchies, "no cgroup hierarchy to make a worker's cgroup in"
    made = {}
    for name in (f"mha-worker-{gone}-0badc0ffee00", "mha-worker-0badc0ffee01", f"mha-worker-{os.getpid()}-0badc0ffee02",
                 f"mha-worker-{gone}-0badc0ffee03", f"mha-worker-{gone}-0badc0ffee04"):
        made[name] = [folder / name for folder in hierarchies]
        for folder in made[name]:
            folder.mkdir()
            if not name.endswith("03"):  # 03 was made a moment ago: its worker may be about to join it
                os.utime(folder, (time.time() - 3600, time.time() - 3600))
    busy = subprocess.Popen(["sleep", "60"])
    try:
        for folder in made[f"mha-worker-{gone}-0badc0ffee04"]:
            (folder / "cgroup.procs").write_text(str(busy.pid))
        class_folder = tmp_path / "class"
        honest_class(class_folder, [], copies=1)
        done = mha_grade(class_folder, tmp_path / "out", "--jobs", "1")
        assert done.returncode == 0, done.stderr[-2000:]
        left = {name: [folder.is_dir() for folder in folders] for name, folders in made.items()}
        assert left == {f"mha-worker-{gone}-0badc0ffee00": [False] * len(hierarchies),  # a server that is gone
                        "mha-worker-0badc0ffee01": [False] * len(hierarchies),  # named by an earlier version
                        f"mha-worker-{os.getpid()}-0badc0ffee02": [True] * len(hierarchies),  # its server is alive
                        f"mha-worker-{gone}-0badc0ffee03": [True] * len(hierarchies),  # a moment old
                        f"mha-worker-{gone}-0badc0ffee04": [True] * len(hierarchies)}  # a process is in it
    finally:
        busy.kill()
        busy.wait()
        for folders in made.values():
            for folder in folders:
                for _ in range(100):
                    try:
                        folder.rmdir()
                        break
                    except FileNotFoundError:
                        break
                    except OSError:
                        time.sleep(0.02)


def _a_dead_pid() -> int:
    """A pid no process has: one of a child that ended (reaped), checked."""
    child = subprocess.Popen(["true"])
    child.wait()
    try:
        os.kill(child.pid, 0)
    except ProcessLookupError:
        return child.pid
    pytest.skip("the ended child's pid was taken again at once")


def test_every_isolation_fixture_has_a_control():
    assert {path.stem for path in ISOLATION.glob("*.py")} == set(ISOLATION_CONTROLS)


@pytest.mark.skipif(shutil.which("ipcs") is None, reason="needs the ipcs command (util-linux)")
def test_submissions_graded_at_once_share_no_ipc_and_leave_none_behind(tmp_path, server):
    """Two colluding submissions graded at once (--jobs 2), then the taker again on its own: neither the
    message queue nor the 512 MiB shared memory segment reaches it, and nothing outlives its worker."""
    requires_root_and_namespaces()
    before = ipc_objects()
    honest_class(tmp_path / "class", ["ipc_publisher", "ipc_reader"], copies=3)
    # The publisher fills 512 MiB as it loads: on a loaded machine that alone can near the 2 s floor of a load,
    # and this test is about what crosses between workers, not about time.
    done = mha_grade(tmp_path / "class", tmp_path / "out", "--jobs", "2", "--timeout-scale", "5")
    assert done.returncode == 0, done.stderr[-2000:]
    results = results_of(tmp_path / "out")
    assert set(results) == {"honest_0", "honest_1", "honest_2", "ipc_publisher", "ipc_reader"}
    for name in ("honest_0", "honest_1", "honest_2", "ipc_publisher"):
        result = results[name]
        assert result["score"] == result["max_score"], (name, result["error"], result["duration"],
                                                        [(test["name"], test["outcome"], test["message"]) for test in result["tests"] if test["score"] < test["max_score"]][:3])
    assert results["ipc_reader"]["score"] == honest_score("ipc_reader", server) == 0.0
    later = tmp_path / "later"
    honest_class(later, ["ipc_reader"], copies=1)
    done = mha_grade(later, tmp_path / "out-later", "--jobs", "2")
    assert done.returncode == 0, done.stderr[-2000:]
    results = results_of(tmp_path / "out-later")
    assert results["ipc_reader"]["score"] == 0.0 and results["honest_0"]["score"] == results["honest_0"]["max_score"]
    left = ipc_objects() - before
    assert not left and not {key for _, key in ipc_objects()} & IPC_KEYS, left


def test_a_class_with_attacks_on_the_host_keeps_every_honest_score(tmp_path, server):
    """Memory held by a tree of processes, a scratch folder filled, the host's UNIX sockets, the system's
    packages: graded through mha grade in a class with honest copies, each attack ends at its honest score."""
    import tempfile

    requires_root_and_namespaces()
    folder = Path("/run") if os.access("/run", os.W_OK) else Path.home()
    socket_folder = Path(tempfile.mkdtemp(prefix="mha-test-sockets-", dir=folder))  # outside the temp folder
    socket_folder.chmod(0o755)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(socket_folder / "host.sock"))
    (socket_folder / "host.sock").chmod(0o777)  # file permissions would let uid nobody in
    listener.listen(8)
    listener.settimeout(0.2)
    attacks = ["memory_tree", "scratch_fill", "unix_sockets", "system_packages"]
    try:
        honest_class(tmp_path / "class", attacks)
        # memory_tree's call waits up to 3 s for its children: longer call limits let it, so the memory limit
        # (not the call limit) is what ends the tree
        done = mha_grade(tmp_path / "class", tmp_path / "out", "--jobs", "2", "--timeout-scale", "10")
        with pytest.raises(socket.timeout):
            listener.accept()
    finally:
        listener.close()
        shutil.rmtree(socket_folder, ignore_errors=True)
    assert done.returncode == 0, done.stderr[-2000:]
    results = results_of(tmp_path / "out")
    assert set(results) == {"honest_0", "honest_1", *attacks}
    for name in ("honest_0", "honest_1"):
        assert results[name]["score"] == results[name]["max_score"], name
    for name in attacks:
        assert results[name]["status"] == "graded" and results[name]["score"] == honest_score(name, server), name
    held = int(message_of(results["memory_tree"], "scaled_dot_product_attention").split(" of 3")[0].split()[-1])
    assert held <= 1, "the tree held more than its memory limit"  # 2 x 1.2 GiB > 2 GiB
    written = int(message_of(results["scratch_fill"], "scaled_dot_product_attention").split("wrote ")[1].split()[0])
    assert written <= Limits().scratch_mb
    assert "reached []" in message_of(results["unix_sockets"], "softmax")
    assert message_of(results["system_packages"], "softmax").endswith("NumPy and SciPy: []")
    assert worker_cgroups() == []
