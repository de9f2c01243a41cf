"""What every advanced-track test file checks, through the real CLI.

Fixture submissions are the audit's library, ``grader/assignments/<assignment>/mutants/``:
each module's ``# expect:`` header says what it is, a catalog id or ``correct``
(a correct solution in another style).
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from conftest import PROJECT, mutants
from grader.authoring.audit import expectation, library_modules
from grader.cli import root
from grader.content.catalog import load_catalog
from grader.grading.assignment import get_assignment
from grader.grading.case import same_value
from grader.grading.store import load_cases


def reference(assignment: str) -> Path:
    return PROJECT / "solutions" / f"{assignment}.py"


def stub(assignment: str) -> Path:
    return PROJECT / "exercises" / f"{assignment}.py"


def mistakes(assignment: str) -> list[Path]:
    return [path for path, expected in library_modules(mutants(assignment)) if expected != "correct"]


def correct_variants(assignment: str) -> list[Path]:
    return [path for path, expected in library_modules(mutants(assignment)) if expected == "correct"]


def fixture_id(path: Path) -> str:
    return expectation(path)


def check(path: Path, assignment: str, *extra: str) -> tuple[int, dict]:
    """``mha check PATH --assignment A --json --all`` through click's runner."""
    result = CliRunner().invoke(root, ["check", str(path), "--assignment", assignment, "--json", "--all", *extra])
    return result.exit_code, json.loads(result.output)


def check_installed(path: Path, assignment: str) -> tuple[int, dict]:
    """The same through the installed ``mha`` command in a subprocess."""
    command = [os.path.join(os.path.dirname(sys.executable), "mha"), "check", str(path), "--assignment", assignment,
               "--json", "--all"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=PROJECT)
    return done.returncode, json.loads(done.stdout)


def catalog_ids(prefix: str) -> set[str]:
    return {identifier for identifier, entry in load_catalog().items()
            if entry.function is not None and identifier.startswith(prefix)}


def assert_full_marks(code: int, result: dict) -> None:
    assert result["status"] == "graded", result.get("error")
    failing = [(test["name"], test["message"]) for test in result["tests"] if test["outcome"] != "passed"]
    assert failing == []
    assert code == 0
    assert result["score"] == result["max_score"] > 0
    assert result["misconceptions"] == []
    assert any(test["visibility"] == "hidden" for test in result["tests"])


def assert_not_implemented(code: int, result: dict) -> None:
    assert code == 1
    assert result["score"] == 0.0 and result["max_score"] > 0
    assert {test["misconception"] for test in result["tests"]} == {"not-implemented"}
    assert result["misconceptions"] == []


def assert_diagnosed(code: int, result: dict, expected: str) -> None:
    assert code == 1
    assert result["misconceptions"] == [expected], [(t["name"], t["misconception"]) for t in result["tests"]]
    assert result["score"] < result["max_score"]


def assert_public_cases_up_to_date(assignment: str) -> None:
    """The shipped ``public_cases.npz`` equals what the track module builds now."""
    exercise = get_assignment(assignment)
    shipped = load_cases(exercise.public_cases_file)
    built = importlib.import_module(f"grader.assignments.{assignment}.cases").public_cases()
    assert sorted(shipped) == sorted(built)
    for name, case in built.items():
        stored = shipped[name]
        for field in ("function", "args", "kwargs", "init", "calls", "weights", "expected", "class_name"):
            assert _same(getattr(stored, field), getattr(case, field)), (name, field)
        assert [(m, label) for m, label, _ in stored.known_twins()] == [(m, label) for m, label, _ in case.known_twins()], name
        for (_, label, stored_value), (_, _, value) in zip(stored.known_twins(), case.known_twins()):
            assert _same(stored_value, value), (name, label)


def _same(a, b) -> bool:
    """Equal structure and values (arrays within tolerance, NaN equal to NaN)."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[key], b[key]) for key in a)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return same_value(np.asarray(a), np.asarray(b)) and np.asarray(a).dtype.kind == np.asarray(b).dtype.kind
    return a == b


def assert_audit_clean(assignment: str) -> None:
    """``mha audit --assignment A`` finds every fixture diagnosed as its ``# expect:`` line says."""
    result = CliRunner().invoke(root, ["audit", "--assignment", assignment, "--json"])
    findings = json.loads(result.output)
    assert [(f["path"], f["verdict"]) for f in findings if f["verdict"] != "ok"] == []
    assert result.exit_code == 0 and len(findings) == len(mistakes(assignment)) + len(correct_variants(assignment))


def release_alone(folder: Path, assignment: str) -> Path:
    """The student release of ``assignment`` alone, built into ``folder``."""
    from grader.authoring.release import build_student_release

    build_student_release(target=folder, assignment=assignment)
    return folder


def assert_released_alone_gives_nothing_away(release: Path, assignment: str) -> None:
    """No line of another exercise's solution, no other stub, nothing hidden, no mutant, no case builder."""
    from test_release import leaks

    assert leaks(release) == []
    files = {path.relative_to(release).as_posix() for path in release.rglob("*") if path.is_file()}
    assert f"exercises/{assignment}.py" in files and f"grader/assignments/{assignment}/public_cases.npz" in files
    assert not any(name.startswith("exercises/") and name.endswith(".py") and assignment not in name
                   for name in files)
    assert not any("/hidden/" in name or "/mutants/" in name or name.endswith("/cases.py") for name in files)


def install_alone(release: Path, root: Path) -> tuple[Path, Path, dict]:
    """``release`` copied under ``root`` and installed alone in a fresh venv: (the copy, its ``mha``, an
    environment that points at nothing of this checkout)."""
    import importlib.util
    import shutil

    from test_release import make_venv_with_our_dependencies

    copy = root / "student"
    shutil.copytree(release, copy)
    python = make_venv_with_our_dependencies(root / "venv")
    isolation = ["--no-build-isolation"] if importlib.util.find_spec("wheel") else []  # as tests/test_release.py
    install = subprocess.run([str(python), "-m", "pip", "install", "--no-deps", *isolation, "--ignore-installed",
                              "--quiet", str(copy)], capture_output=True, text=True)
    assert install.returncode == 0, install.stdout + install.stderr
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "MHA_SOLUTIONS", "MHA_EXERCISES", "VIRTUAL_ENV")}
    env["MHA_CHECK_SERVER"] = "off"  # made once per module, before conftest's setting: no warm server left behind
    return copy, root / "venv" / "bin" / "mha", env


def check_in_release(installed: tuple[Path, Path, dict], source: Path, assignment: str,
                     *arguments: str) -> tuple[int, dict]:
    """``source`` put in place of the stub of an ``install_alone`` release, then ``mha check ARGUMENTS --json``
    run there: (its exit status, its result)."""
    import shutil

    copy, mha, env = installed
    shutil.copy(source, copy / "exercises" / f"{assignment}.py")
    done = subprocess.run([str(mha), "check", *arguments, "--json"], cwd=copy, env=env, capture_output=True,
                          text=True)
    assert done.stdout.startswith("{"), done.stdout + done.stderr
    return done.returncode, json.loads(done.stdout)


def assert_installed_release_grades_stub_and_reference(installed: tuple[Path, Path, dict], assignment: str) -> None:
    """In the installed release, its README's ``mha check`` gives the stub 0 and the reference full marks."""
    arguments = (f"exercises/{assignment}.py", "--assignment", assignment)
    code, stub = check_in_release(installed, PROJECT / "exercises" / f"{assignment}.py", assignment, *arguments)
    assert code == 1 and stub["score"] == 0, stub
    code, reference = check_in_release(installed, PROJECT / "solutions" / f"{assignment}.py", assignment, *arguments)
    assert code == 0, reference
    assert reference["score"] == reference["max_score"] > 0


def drill_failures(assignment: str, function: str, workspace: Path) -> set[str]:
    """A drill of ``function`` started in ``workspace`` (MHA_DATA_DIR set by the caller): its file stubs that
    function alone, with no hint, and ``mha check`` fails it; the functions whose checks fail."""
    from grader.practice.drill import start_drill

    drill = start_drill(function=function, workspace=workspace, assignment=assignment)
    source = open(drill.path, encoding="utf-8").read()
    assert source.count("raise NotImplementedError") == 1 and "# Hint:" not in source
    code, result = check(drill.path, assignment)
    assert code == 1
    return {test["function"] for test in result["tests"] if test["outcome"] != "passed"}
