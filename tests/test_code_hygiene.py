"""Code a reader is misled by: lines that can never run, imports nothing uses (vulture, at the confidence
where it is never wrong); and imports in order (isort, configured in pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys

from conftest import PROJECT

# student code on purpose: the mutant library, the template exercise's placeholders, hanging fixtures (vulture
# matches a pattern with a wildcard against the whole absolute path, one without as a part of it)
EXCLUDED = ("*/grader/assignments/*/mutants/*", "grader/authoring/templates", "tests/fixtures")
# the parameters a signal handler must take
NEEDED_NAMES = ("signum", "frame")


def vulture(*paths: str, confidence: int = 90) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vulture", *paths, "--min-confidence", str(confidence),
                           "--exclude", ",".join(EXCLUDED), "--ignore-names", ",".join(NEEDED_NAMES)],
                          capture_output=True, text=True, cwd=PROJECT)


def test_no_code_after_a_return_and_no_unused_import():
    done = vulture("grader", "tests", "benchmarks")
    assert done.returncode == 0 and done.stdout == "", done.stdout + done.stderr


def test_the_student_code_kept_on_purpose_is_left_out():
    done = vulture(str(PROJECT / "grader" / "assignments" / "multihead_attention" / "mutants"), confidence=60)
    assert done.returncode == 0 and done.stdout == "", done.stdout[-2000:] + done.stderr


def test_the_scan_does_find_unreachable_code(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("import os\n\n\ndef cleanup(made):\n    return made\n    os.remove(made)\n", encoding="utf-8")
    done = vulture(str(sample))
    assert done.returncode != 0 and "unreachable code after 'return'" in done.stdout, done.stdout + done.stderr


def test_imports_are_in_order():
    """Standard library, then third-party, then the grader, each sorted: a module's dependencies at a glance.
    (isort rather than ruff: its grid mode wraps a long import under its parenthesis, as this code does.)"""
    done = subprocess.run([sys.executable, "-m", "isort", "--check-only", "--diff", "grader", "tests", "benchmarks"],
                          capture_output=True, text=True, cwd=PROJECT)
    assert done.returncode == 0, (done.stdout[-3000:] + done.stderr[-1000:] + "\nexpected every import in order; "
                                  "sort them with `isort grader tests benchmarks`")


def test_the_import_check_does_find_imports_out_of_order(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("import sys\nimport os\n\nprint(os, sys)\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "isort", "--check-only", "--settings-path", str(PROJECT),
                           str(sample)], capture_output=True, text=True, cwd=PROJECT)
    assert done.returncode != 0 and "incorrectly sorted" in done.stdout + done.stderr
