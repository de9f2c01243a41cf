"""The suites run under plain pytest too, with the same verdicts as the fast runner."""

import subprocess
import sys

from conftest import PROJECT, mutants
from grader.grading.grade import grade_submission


def test_plain_pytest_and_the_runner_agree_on_a_buggy_module(tmp_path):
    path = mutants("multihead_attention") / "mistakes" / "combine_heads_wrong_order.py"
    suites = PROJECT / "grader" / "assignments" / "multihead_attention"
    done = subprocess.run([sys.executable, "-m", "pytest", str(suites), "-q", "-rA", "-p", "no:cacheprovider",
                           "--submission", str(path), "--junitxml", str(tmp_path / "j.xml")],
                          capture_output=True, text=True, cwd=PROJECT)
    assert done.returncode == 1, done.stdout[-2000:]
    failed_by_pytest = {line.split("::")[-1].split()[0] for line in done.stdout.splitlines()
                        if line.startswith("FAILED")}
    result = grade_submission(path=path, visibility="all", student="combine_heads_wrong_order")
    failed_by_runner = {test.name for test in result.tests if test.outcome != "passed"}
    assert failed_by_pytest == failed_by_runner and failed_by_runner
    # the plugin scores the run as the grader does
    assert f"mha-lab: {result.score:g} / {result.max_score:g} points from {len(result.tests)} checks" in done.stdout


def test_under_plain_pytest_a_failure_reads_as_the_diagnosis():
    path = mutants("multihead_attention") / "mistakes" / "attention_transpose_by_reshape.py"
    suites = PROJECT / "grader" / "assignments" / "multihead_attention" / "public" / "test_attention.py"
    done = subprocess.run([sys.executable, "-m", "pytest", str(suites), "-q", "-p", "no:cacheprovider",
                           "--submission", str(path)], capture_output=True, text=True, cwd=PROJECT)
    assert done.returncode == 1
    assert "CheckFailure: [attention-wrong-transpose] The scores use K.reshape(B, H, d_k, S)" in done.stdout
    assert "matches_mistake" not in done.stdout
