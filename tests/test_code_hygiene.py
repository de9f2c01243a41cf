"""Code a reader is misled by: lines that can never run, imports nothing uses (vulture, at the confidence
where it is never wrong)."""

from __future__ import annotations

import subprocess
import sys

from conftest import PROJECT

# student code on purpose: the mutant library, the template exercise's placeholders, hanging fixtures
EXCLUDED = ("grader/assignments/*/mutants", "grader/authoring/templates", "tests/fixtures")
# the parameters a signal handler must take
NEEDED_NAMES = ("signum", "frame")


def vulture(*paths: str, confidence: int = 90) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vulture", *paths, "--min-confidence", str(confidence),
                           "--exclude", ",".join(EXCLUDED), "--ignore-names", ",".join(NEEDED_NAMES)],
                          capture_output=True, text=True, cwd=PROJECT)


def test_no_code_after_a_return_and_no_unused_import():
    done = vulture("grader", "tests", "benchmarks")
    assert done.returncode == 0 and done.stdout == "", done.stdout + done.stderr


def test_the_scan_does_find_unreachable_code(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("import os\n\n\ndef cleanup(made):\n    return made\n    os.remove(made)\n", encoding="utf-8")
    done = vulture(str(sample))
    assert done.returncode != 0 and "unreachable code after 'return'" in done.stdout, done.stdout + done.stderr
