"""Attacks on what the trusted side decides and keeps, each graded through the real ``mha grade``:

- a worker naming its own outcome (an exception class called ``Timeout``, ``WorkerGone`` or ``Stopped``),
- a neighbour of a hung function judged on values no worker may receive,
- the printed-output file swapped for a link to the reference,
- a large honest submission under the documented size limit,
- replies and outcomes beyond any bound the checks need,
- memory hidden in memfd and tmpfs pages where no memory cgroup counts it,
- workers that kill or starve their classmates.

Each attack is held to its *honest score*: what the same file earns with the attack taken out.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import FIXTURES, PROJECT

BOUNDARY = FIXTURES / "hostile" / "boundary"
REFERENCE = PROJECT / "solutions" / "multihead_attention.py"


def requires_root() -> None:
    if os.geteuid() != 0:
        if os.environ.get("CI"):
            pytest.fail("CI must run the sandbox tests as root (namespaces, cgroups, uids)")
        pytest.skip("needs root: namespaces, cgroups and other uids are root's")


def without_attack(text: str) -> str:
    """A fixture's honest twin: its ``# BEGIN ATTACK`` ... ``# END ATTACK`` block taken out, and any
    ``# HONEST: <line>`` comment's line put in place of the line it ends."""
    text = re.sub(r"^[ \t]*# BEGIN ATTACK.*?# END ATTACK\n", "", text, flags=re.S | re.M)
    return re.sub(r"^( *)[^\n]*# HONEST: ([^\n]*)$", r"\1\2", text, flags=re.M)


def mha_command() -> list[str]:
    """The installed ``mha`` command, or the same entry point run by this interpreter."""
    return [shutil.which("mha")] if shutil.which("mha") else [sys.executable, "-c", "from grader.cli import main; main()"]


def mha_grade(submissions: Path, out: Path, *options: str, without: str = "",
              timeout: float = 600) -> subprocess.CompletedProcess:
    """The installed ``mha grade`` on this checkout; ``without`` leaves sandbox layers out (``MHA_SANDBOX_WITHOUT``)."""
    command = mha_command()
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join([str(PROJECT), os.environ.get("PYTHONPATH", "")]))
    if without:
        environment["MHA_SANDBOX_WITHOUT"] = without
    return subprocess.run([*command, "grade", str(submissions), "--out", str(out), *options], capture_output=True,
                          text=True, timeout=timeout, env=environment)


def graded_class(tmp_path: Path, files: dict[str, str], *options: str, without: str = "") -> dict[str, dict]:
    """Grade a class of ``{student: source}`` through ``mha grade``; the results by student."""
    submissions, out = tmp_path / "class", tmp_path / "out"
    submissions.mkdir(parents=True, exist_ok=True)
    for student, text in files.items():
        (submissions / f"{student}.py").write_text(text)
    done = mha_grade(submissions, out, "--visibility", "all", *options, without=without)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    results = {result["student"]: result for result in json.loads((out / "results.json").read_text())}
    assert set(results) == set(files), results.keys()
    return results


def outcomes(result: dict) -> dict[str, tuple]:
    return {test["name"]: (test["outcome"], test["score"]) for test in result["tests"]}


# ---- only the trusted side names a hang, a crash or a stop ----------------------------------------------
def test_exceptions_named_like_the_graders_outcomes_are_only_the_students_exceptions(tmp_path):
    """split_heads raises a class named Timeout, forward one named WorkerGone, softmax one named Stopped
    with a function's name: the same score, check by check, as the twin that raises RuntimeError, and no
    hang or crash is reported."""
    attack = (BOUNDARY / "named_outcomes.py").read_text()
    honest = without_attack(attack).replace("raise Timeout(", "raise RuntimeError(").replace(
        "raise WorkerGone(", "raise RuntimeError(").replace("raise Stopped(", "raise RuntimeError(")
    results = graded_class(tmp_path, {"attacker": attack, "twin": honest, "reference": REFERENCE.read_text()})
    attacker, twin = results["attacker"], results["twin"]
    assert results["reference"]["score"] == results["reference"]["max_score"]
    assert attacker["status"] == twin["status"] == "graded"
    assert attacker["score"] == twin["score"] and outcomes(attacker) == outcomes(twin)
    assert not any(test["outcome"] == "timeout" for test in attacker["tests"]), outcomes(attacker)
    split = [test for test in attacker["tests"] if test["function"] == "split_heads" and test["outcome"] != "passed"]
    assert split and all("Timeout" in test["message"] for test in split), [test["message"] for test in split]
    assert not any(word in test["message"] for test in attacker["tests"]
                   for word in ("did not finish", "hung", "ended the worker", "was killed"))


# ---- no expected value of any check is sent into the worker ---------------------------------------------
def _leaves(value):
    if isinstance(value, (tuple, list)):
        for item in value:
            yield from _leaves(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, np.ndarray):
        yield value


def test_no_expected_value_is_ever_sent_to_a_worker_even_around_a_hang(monkeypatch):
    """split_heads hangs: combine_heads is still judged (its own checks pass), and of every array sent into
    any worker, none equals a value some check expects (the reference's split of the same input included)."""
    from grader.grading import grade as grade_module
    from grader.sandbox import client

    sent, cases = [], []
    encode = client.encode_request

    def recording_encode(value, blobs, sent_ids=None):
        sent.extend(_leaves(value))
        return encode(value, blobs, sent_ids)

    run_tests = grade_module.run_tests

    def recording_run_tests(tests, *, fixtures, **options):
        cases.extend(case for chosen in fixtures.values() for case in (chosen["cases"] or {}).values())
        return run_tests(tests, fixtures=fixtures, **options)

    monkeypatch.setattr(client, "encode_request", recording_encode)
    monkeypatch.setattr(grade_module, "run_tests", recording_run_tests)
    limits = client.Limits(call_timeout=0.5, submission_timeout=20.0, max_restarts=4)
    server = client.start_server()
    try:
        result = grade_module.grade_submission(path=BOUNDARY / "split_hangs.py", visibility="all", limits=limits,
                                               server=server, student="sam")
    finally:
        server.stop()
    by_name = {test.name: test for test in result.tests}
    assert by_name["test_split_heads_gives_each_head_a_contiguous_block"].outcome == "timeout"
    assert by_name["test_combine_heads_undoes_split_heads"].outcome == "passed"  # judged alone, honestly
    assert by_name["test_combine_heads_concatenates_heads_in_order"].outcome == "passed"
    expected = [leaf for case in cases for leaf in _leaves(case.expected) if leaf.size > 1]
    assert sent and expected and any(case.id.endswith("split/cross") for case in cases)
    leaked = {case.id for case in cases for leaf in _leaves(case.expected) if leaf.size > 1
              for array in sent if array.shape == leaf.shape and np.array_equal(array, leaf)}
    assert not leaked, leaked


# ---- the printed output is read from the grader's own descriptor ----------------------------------------
@pytest.mark.parametrize("without", ["namespaces", "namespaces,landlock"])
def test_a_printed_output_file_swapped_for_a_link_leaks_nothing(tmp_path, without):
    """Without a mount namespace the worker works in the folder that holds its output file: it replaces the
    file with a link to a file only root may read. results.json shows what it printed, and nothing of that file."""
    requires_root()
    secret = Path("/tmp/mha-boundary-secret.txt")
    marker = "MHA-BOUNDARY-SECRET-7f3a"
    secret.write_text(f"{marker}\n" * 50)
    secret.chmod(0o600)
    try:
        attack = (BOUNDARY / "output_link.py").read_text()
        results = graded_class(tmp_path, {"linker": attack, "twin": without_attack(attack)}, without=without)
    finally:
        secret.unlink()
    raw = (tmp_path / "out" / "results.json").read_text()
    assert marker not in raw and not any(marker in path.read_text(errors="replace")
                                         for path in (tmp_path / "out").rglob("*") if path.is_file())
    linker, twin = results["linker"], results["twin"]
    assert linker["score"] == twin["score"] > 0 and outcomes(linker) == outcomes(twin)
    shown = [test["output"] for test in linker["tests"] if test["function"] == "softmax" and test["output"]]
    assert shown and all("softmax was called" in text for text in shown), shown
    assert any("and printed again" in text for text in shown), shown  # the same file, read on after the swap


# ---- the documented size limit is the real one ----------------------------------------------------------
def test_an_honest_submission_just_under_the_size_limit_gets_full_marks(tmp_path):
    """1.2 MB (and 1.9 MB of comments in Chinese, whose JSON escapes would be 3.8 MB) under the 2 MiB limit:
    full marks; a byte over the limit is refused with the limit named."""
    from grader.sandbox.source import MAX_SOURCE_BYTES

    reference = REFERENCE.read_text()
    notes = "".join(f"# note {number}: the rows of the weights sum to one over the keys\n" for number in range(20000))
    chinese = "".join(f"# 第 {number} 条笔记：每一行权重在键上之和为一，缩放因子是单个头宽度的平方根。\n"
                      for number in range(19000))
    over = reference + "#" * (MAX_SOURCE_BYTES + 1 - len(reference.encode()))
    files = {"long": reference + notes, "chinese": reference + chinese, "over": over}
    assert 1_200_000 < len(files["long"].encode()) < len(files["chinese"].encode()) < MAX_SOURCE_BYTES
    results = graded_class(tmp_path, files)
    for name in ("long", "chinese"):
        assert results[name]["status"] == "graded", results[name]["error"]
        assert results[name]["score"] == results[name]["max_score"], name
    assert results["over"]["status"] == "error" and f"{MAX_SOURCE_BYTES:,}" in results["over"]["error"]


def test_a_notebook_of_many_failing_cells_loads_and_reports_a_bounded_number_of_them(tmp_path):
    """A notebook whose 3,000 cells each raise with a message of 500 characters, then a correct solution: it loads (the
    load's reply stays small), the errors shown are bounded, and the solution gets full marks."""
    cells = [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
              "source": f"raise ValueError('{'x' * 500} {number}')"} for number in range(3000)]
    cells.append({"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                  "source": REFERENCE.read_text()})
    notebook = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    submissions = tmp_path / "class"
    submissions.mkdir()
    (submissions / "cells.ipynb").write_text(json.dumps(notebook))
    done = mha_grade(submissions, tmp_path / "out", "--visibility", "all")
    assert done.returncode == 0, done.stderr[-2000:]
    (result,) = json.loads((tmp_path / "out" / "results.json").read_text())
    assert result["status"] == "graded" and result["score"] == result["max_score"], result["error"]
    assert len(json.dumps(result)) < 200_000


# ---- a bound on what the trusted side reads and keeps ------------------------------------------------------
def _tree(root: int) -> list[int]:
    found, queue = [], [root]
    while queue:
        parent = queue.pop()
        try:
            children = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
        except OSError:
            continue
        found += [int(child) for child in children]
        queue += [int(child) for child in children]
    return found


def peak_grading_memory(submissions: Path, out: Path) -> int:
    """The highest resident memory (VmHWM, bytes) of any process of ``mha grade --jobs 1`` other than the
    sandbox's own (the fork server, keepers and workers run ``forkserver.py``), sampled while it runs."""
    import time

    command = [*mha_command(), "grade", str(submissions), "--out", str(out), "--visibility", "all", "--jobs", "1"]
    environment = dict(os.environ, PYTHONPATH=str(PROJECT))
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=environment)
    peaks: dict[int, int] = {}
    while process.poll() is None:
        for pid in [process.pid, *_tree(process.pid)]:
            try:
                if "forkserver.py" in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"):
                    continue
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        peaks[pid] = max(peaks.get(pid, 0), int(line.split()[1]) << 10)
            except OSError:
                pass
        time.sleep(0.02)
    assert process.returncode == 0, process.stderr.read()[-2000:]
    return max(peaks.values())


def test_replies_far_larger_than_the_expected_values_are_neither_read_nor_kept(tmp_path):
    """Every call of a submission returns 48 MiB: the grading lane grows by no more than a few MiB beyond an
    honest class's, and the attack earns its twin's score."""
    attack = (BOUNDARY / "huge_replies.py").read_text()
    results = graded_class(tmp_path / "scores", {"huge": attack, "twin": without_attack(attack)})
    assert results["huge"]["score"] == results["twin"]["score"]
    assert outcomes(results["huge"]) == outcomes(results["twin"])
    honest, hostile = tmp_path / "honest", tmp_path / "hostile"
    honest.mkdir()
    hostile.mkdir()
    shutil.copy(REFERENCE, honest / "alice.py")
    (hostile / "alice.py").write_text(attack)
    baseline = peak_grading_memory(honest, tmp_path / "out-honest")
    attacked = peak_grading_memory(hostile, tmp_path / "out-hostile")
    assert attacked < baseline + (128 << 20), (attacked >> 20, baseline >> 20)


# ---- a CPU share per worker ---------------------------------------------------------------------------------
def test_a_worker_that_starts_many_sessions_does_not_starve_its_classmates(tmp_path):
    """128 spinning processes, each in a session of its own, in the worker of one student graded beside
    honest classmates (--jobs 2): the classmates keep full marks and take about as long as beside the same
    student without the 128 (a single spinning worker), and the isolation says the CPU share was in force."""
    import statistics

    requires_root()
    attack = (BOUNDARY / "session_spinners.py").read_text()
    durations = {}
    for name, spinner in (("twin", without_attack(attack)), ("spinner", attack)):
        files = {f"honest_{number}": REFERENCE.read_text() for number in range(6)}
        files["a_spinner"] = spinner  # graded first: its classmates are graded while it spins
        results = graded_class(tmp_path / name, files, "--jobs", "2")
        for number in range(6):
            honest = results[f"honest_{number}"]
            assert honest["score"] == honest["max_score"], [(test["name"], test["outcome"])
                                                           for test in honest["tests"] if test["outcome"] != "passed"]
        assert results["a_spinner"]["score"] == 0.0
        durations[name] = statistics.median(results[f"honest_{number}"]["duration"] for number in range(6))
        assert "cpu" in results["honest_0"]["isolation"].split("cgroup per worker")[1].split(")")[0]
    assert durations["spinner"] < 2 * durations["twin"], durations  # 4.5x without a CPU share


# ---- memory counted where no memory cgroup is made ---------------------------------------------------------
HONEST_SOFTMAX = (FIXTURES / "hostile" / "honest_softmax_only.py").read_text()


@pytest.mark.parametrize("without", ["cgroups", "cgroups,namespaces"])
def test_memfd_pages_count_against_the_memory_limit_without_a_cgroup(tmp_path, without):
    """Three children hold 2.8 GiB of memfd pages (written, not mapped) under a 2 GiB limit, where no memory
    cgroup can be made: the keeper's count includes them and ends the worker; the honest softmax keeps its
    points."""
    requires_root()
    results = graded_class(tmp_path, {"hoarder": (BOUNDARY / "memfd_tree.py").read_text(), "twin": HONEST_SOFTMAX},
                           "--timeout-scale", "40", without=without)  # writing 2.8 GiB takes seconds
    hoarder, twin = results["hoarder"], results["twin"]
    assert hoarder["score"] == twin["score"] > 0
    assert "WARNING: no cgroup per worker" in hoarder["isolation"]
    message = next(test["message"] for test in hoarder["tests"] if test["function"] == "scaled_dot_product_attention")
    assert "memfd pages at once" not in message and "MiB" in message, message  # ended before it could say so


def test_shared_memory_segments_no_process_maps_count_against_the_memory_limit_without_a_cgroup(tmp_path):
    """Three children fill System V segments of 900 MiB and detach (2.7 GiB that no process maps) under a
    2 GiB limit, with no memory cgroup: the keeper, in the worker's own IPC namespace, counts the segments
    and ends the worker; the honest softmax keeps its points."""
    requires_root()
    results = graded_class(tmp_path, {"hoarder": (BOUNDARY / "shm_tree.py").read_text(), "twin": HONEST_SOFTMAX},
                           "--timeout-scale", "80", without="cgroups")
    hoarder, twin = results["hoarder"], results["twin"]
    assert hoarder["score"] == twin["score"] > 0
    message = next(test["message"] for test in hoarder["tests"] if test["function"] == "scaled_dot_product_attention")
    assert "filled at once" not in message and "MiB" in message, message


# ---- workers graded at once cannot signal each other in any fallback ---------------------------------------
@pytest.mark.parametrize("without", ["namespaces", "namespaces,landlock", "namespaces,landlock,uid-pool"])
def test_a_worker_cannot_kill_its_classmates_workers_in_any_fallback(tmp_path, without):
    """A submission whose process kills every process it may signal, graded first beside honest classmates
    with --jobs 2: where no pid namespace separates the workers, Landlock's signal scoping does; without it, a
    uid per worker; without that, the run grades one at a time. Every classmate keeps full marks."""
    requires_root()
    files = {f"honest_{number}": REFERENCE.read_text() for number in range(4)}
    files["a_killer"] = (BOUNDARY / "kill_classmates.py").read_text()
    results = graded_class(tmp_path, files, "--jobs", "2", without=without)
    for number in range(4):
        honest = results[f"honest_{number}"]
        assert honest["score"] == honest["max_score"], [(test["name"], test["message"][:80])
                                                       for test in honest["tests"] if test["outcome"] != "passed"]
    assert results["a_killer"]["score"] == 0.0
    isolation = results["honest_0"]["isolation"]
    if without == "namespaces,landlock":
        assert "a uid of its own" in isolation, isolation
    if without.endswith("uid-pool"):
        assert "graded one at a time" in isolation, isolation


def test_the_outcomes_kept_of_one_submission_stay_within_their_budget(monkeypatch):
    """With a budget smaller than what the reference's outcomes need (about 180 KiB), the outcomes kept
    never pass it: those beyond it are kept as descriptions (and fail as values of the wrong type), and the
    checks still all end in a result."""
    from grader.grading import grade as grade_module
    from grader.grading import student as student_module
    from grader.sandbox.client import start_server

    made = []
    original = student_module.StudentCode.__init__

    def recording_init(self, *args, **options):
        original(self, *args, **options)
        made.append(self)

    monkeypatch.setattr(student_module.StudentCode, "__init__", recording_init)
    server = start_server()
    try:
        whole = grade_module.grade_submission(path=REFERENCE, visibility="all", server=server, student="sam")
        monkeypatch.setattr(student_module, "KEPT_BYTES", 64 << 10)
        within = grade_module.grade_submission(path=REFERENCE, visibility="all", server=server, student="sam")
    finally:
        server.stop()
    assert whole.score == whole.max_score and made[0].kept > 64 << 10
    assert made[1].kept <= 64 << 10 and 0 < within.score < whole.score
    assert len(within.tests) == len(whole.tests)
    assert {test.misconception for test in within.tests if test.outcome == "failed"} <= {"wrong-type", "wrong-shape",
                                                                                         "numeric-mismatch", "error"}
