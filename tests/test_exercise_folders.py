"""An exercise is one folder: everything the grader knows of it lives in ``grader/assignments/<name>/``.

Outside that folder at most one file of the package names the exercise, and
the exercises are found by their folders (no table to edit).
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import PROJECT
from grader.errors import ContentError
from grader.grading.assignment import ASSIGNMENTS, discover, read_spec

PACKAGE = PROJECT / "grader"
BINARY = (".pyc", ".npz", ".png", ".whl", ".zip")


def reference_pattern(name: str) -> re.Pattern:
    """How a file names an exercise (not a function that shares its name): a path or module of it, a
    quoted name, ``--assignment NAME`` or ``NAME.py``."""
    return re.compile(rf"(?<!\w)(?:exercises|solutions|assignments)[/.]{name}\b|--assignment[ =]{name}\b"
                      rf"|[\"']{name}[\"']|\b{name}\.(?:py|ipynb)\b")


@functools.cache
def text_files(root: Path) -> tuple[tuple[Path, str], ...]:
    return tuple((path, path.read_text(encoding="utf-8", errors="replace")) for path in sorted(root.rglob("*"))
                 if path.is_file() and "__pycache__" not in path.parts and path.suffix not in BINARY)


def files_naming(name: str, root: Path = PACKAGE) -> list[str]:
    """The package's text files outside the exercise's own folder that name it."""
    own = root / "assignments" / name
    pattern = reference_pattern(name)
    return [path.relative_to(root).as_posix() for path, text in text_files(root)
            if own not in path.parents and pattern.search(text)]


@pytest.mark.parametrize("name", sorted(ASSIGNMENTS))
def test_outside_its_folder_at_most_one_file_names_the_exercise(name):
    assert len(files_naming(name)) <= 1, files_naming(name)


def test_the_count_sees_each_way_of_naming_an_exercise(tmp_path):
    (tmp_path / "assignments" / "kv_cache").mkdir(parents=True)
    (tmp_path / "assignments" / "kv_cache" / "cases.py").write_text('ASSIGNMENT = "kv_cache"\n')  # its own: fine
    ways = {"a.py": 'get_assignment("kv_cache")', "b.toml": "run `mha check --assignment kv_cache`",
            "c.md": "edit exercises/kv_cache.py", "d.py": "import grader.assignments.kv_cache.cases",
            "e.toml": "the file kv_cache.py"}
    for file, text in ways.items():
        (tmp_path / file).write_text(text + "\n")
    (tmp_path / "f.py").write_text("def kv_cache_update(): ...  # a kv_cache, the idea\n")  # not the exercise
    assert files_naming("kv_cache", tmp_path) == sorted(ways)


def test_exercises_are_found_by_their_folders(tmp_path):
    for name, position in (("second", 2), ("first", 1), ("_template", 0)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "exercise.toml").write_text(
            f'schema_version = 1\nposition = {position}\nfunctions = ["f", "g"]\nunlockable = ["g"]\n')
    (tmp_path / "notes").mkdir()  # a folder without a spec is no exercise
    found = discover(tmp_path)
    assert list(found) == ["first", "second"]  # curriculum order; templates (_name) are never exercises
    assert found["first"].functions == ("f", "g") and found["first"].unlockable == ("g",)
    assert set(ASSIGNMENTS) == {path.parent.name for path in (PACKAGE / "assignments").glob("[!_]*/exercise.toml")}


def test_a_spec_that_names_an_ungraded_function_says_where(tmp_path):
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "exercise.toml").write_text(
        'schema_version = 1\nposition = 1\nfunctions = ["f"]\n[drill]\nfunctions = ["h"]\n')
    with pytest.raises(ContentError, match=r"broken/exercise.toml: 'drill.functions' names h"):
        read_spec(tmp_path / "broken")


@pytest.mark.parametrize("name", sorted(ASSIGNMENTS))
def test_each_folder_holds_the_parts_of_an_exercise(name):
    folder = PACKAGE / "assignments" / name
    parts = {"exercise.toml", "cases.py", "checks.toml", "misconceptions.toml", "public", "hidden", "mutants",
             "public_cases.npz"}
    assert parts <= {path.name for path in folder.iterdir()}, name
    assert (PROJECT / "exercises" / f"{name}.py").is_file() and (PROJECT / "solutions" / f"{name}.py").is_file()


# ---- a new exercise from the template, graded through the CLI ---------------------------------
def _copy_of_the_project(target: Path) -> Path:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for part in ("grader", "exercises", "solutions"):
        shutil.copytree(PROJECT / part, target / part, ignore=ignore)
    shutil.copy(PROJECT / "pyproject.toml", target / "pyproject.toml")
    return target


def _mha(project: Path, *args: str) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if key not in ("MHA_EXERCISES", "MHA_SOLUTIONS")}
    env["PYTHONPATH"] = str(project)  # the copy's grader, not the installed one
    return subprocess.run([sys.executable, *args], cwd=project, env=env, capture_output=True, text=True,
                          timeout=600)


@pytest.mark.slow
def test_a_new_exercise_from_the_template_is_graded_at_once(tmp_path):
    """One command makes a complete tiny exercise; its stub scores 0, its reference full marks, its mutant
    is named in a class run, and its audit is clean, with nothing edited outside the new folder but the
    stub and the reference."""
    project = _copy_of_the_project(tmp_path / "project")
    made = _mha(project, "-m", "grader.authoring.new_exercise", "tiny_scores")
    assert made.returncode == 0, made.stderr
    folder = project / "grader" / "assignments" / "tiny_scores"
    assert (folder / "exercise.toml").is_file() and (folder / "public_cases.npz").is_file()
    assert not list(folder.rglob("*@*")) and "@NAME@" not in (folder / "cases.py").read_text()
    where = _mha(project, "-c", "import grader; print(grader.__file__)")
    assert where.stdout.strip() == str(project / "grader" / "__init__.py")

    stub = _mha(project, "-m", "grader.cli", "check", "exercises/tiny_scores.py", "--json")
    result = json.loads(stub.stdout)
    assert result["assignment"] == "tiny_scores"  # found by its file name, no table edited
    assert result["score"] == 0 and result["max_score"] == 3
    assert {test["misconception"] for test in result["tests"]} == {"not-implemented"}
    reference = _mha(project, "-m", "grader.cli", "check", "solutions/tiny_scores.py", "--assignment",
                     "tiny_scores", "--all", "--json")
    result = json.loads(reference.stdout)
    assert reference.returncode == 0 and result["score"] == result["max_score"] == 5, reference.stderr

    audit = _mha(project, "-m", "grader.cli", "audit", "--assignment", "tiny_scores", "--json")
    findings = json.loads(audit.stdout)
    assert audit.returncode == 0 and len(findings) == 2 and {f["verdict"] for f in findings} == {"ok"}

    submissions = project / "class"
    submissions.mkdir()
    shutil.copy(project / "exercises" / "tiny_scores.py", submissions / "ann.py")
    shutil.copy(project / "solutions" / "tiny_scores.py", submissions / "bob.py")
    shutil.copy(folder / "mutants" / "mistakes" / "no_scale.py", submissions / "cat.py")
    graded = _mha(project, "-m", "grader.cli", "grade", "class", "--out", "out", "--assignment", "tiny_scores",
                  "--jobs", "1")
    assert graded.returncode == 0, graded.stderr
    results = {row["student"]: row for row in json.loads((project / "out" / "results.json").read_text())}
    assert (results["ann"]["score"], results["bob"]["score"]) == (0, 5)
    assert results["cat"]["score"] < 5 and results["cat"]["misconceptions"] == ["tiny-scores-no-scale"]
    assert "The scores are not divided by sqrt(d_k)" in (project / "out" / "report.html").read_text()


def test_the_template_refuses_a_taken_or_unusable_name(tmp_path, capsys):
    from grader.authoring.new_exercise import main

    for name, why in (("kv_cache", "already exists"), ("Rotary-Embedding", "cannot name an exercise"),
                      ("class", "cannot name an exercise")):
        with pytest.raises(SystemExit) as stopped:
            main([name])
        assert stopped.value.code == 2 and why in capsys.readouterr().err
    assert not (PACKAGE / "assignments" / "Rotary-Embedding").exists()


@pytest.mark.parametrize("name", sorted(ASSIGNMENTS))
def test_each_probed_mistake_is_one_of_the_exercise_the_check_can_name(name):
    """A check's ``probes`` (the mistakes it is written to reveal) are catalogued mistakes of its exercise."""
    from grader.content.catalog import load_catalog
    from grader.grading.runner import collect

    exercise = ASSIGNMENTS[name]
    own = load_catalog((exercise.folder / "misconceptions.toml",))  # the exercise's own catalog file
    probes = {probe: test.name for test in collect(exercise, ("public", "hidden")) for probe in test.probes}
    assert probes and set(probes) <= set(own), {probe: test for probe, test in probes.items() if probe not in own}
    assert all(own[probe].function in exercise.functions for probe in probes)
