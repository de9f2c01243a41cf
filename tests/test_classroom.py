"""`mha release --github-classroom`: the starter repository's workflow, parsed and run here step by step."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import PROJECT
from grader.authoring.classroom import COMMAND_GRADER, REPORTER, add_classroom_autograding
from grader.authoring.release import build_student_release
from grader.grading.assignment import get_assignment
from grader.grading.runner import collect

ASSIGNMENT = "multihead_attention"


@pytest.fixture(scope="module")
def starter(tmp_path_factory) -> Path:
    release = build_student_release(target=tmp_path_factory.mktemp("classroom") / "starter", assignment=ASSIGNMENT,
                                    archive=False)
    return add_classroom_autograding(folder=release.folder, assignment=ASSIGNMENT).folder


def workflow(folder: Path) -> dict:
    return yaml.safe_load((folder / ".github" / "workflows" / "classroom.yml").read_text(encoding="utf-8"))


def graded_steps(folder: Path) -> list[dict]:
    steps = workflow(folder)["jobs"]["run-autograding-tests"]["steps"]
    return [step for step in steps if step.get("uses") == COMMAND_GRADER]


def run_like_the_command_grader(folder: Path) -> dict[str, float]:
    """Each graded step's command, in the repository, worth max-score when it exits 0 (as the action does).

    ``mha`` is this environment's, with the starter's own ``grader`` package first on the path,
    so the checks are the ones the repository ships (public only: it has no solutions).
    """
    environment = {key: value for key, value in os.environ.items() if key not in ("MHA_SOLUTIONS", "MHA_EXERCISES")}
    environment["PYTHONPATH"] = str(folder)
    earned = {}
    for step in graded_steps(folder):
        command = shlex.split(step["with"]["command"])
        assert command[0] == "mha"
        done = subprocess.run([sys.executable, "-m", "grader.cli", *command[1:]], cwd=folder, env=environment,
                              capture_output=True, text=True, timeout=60 * step["with"]["timeout"])
        assert done.returncode in (0, 1), done.stdout + done.stderr
        earned[step["id"]] = float(step["with"]["max-score"]) if done.returncode == 0 else 0.0
    return earned


def test_workflow_has_the_shape_github_classroom_reads(starter):
    data = workflow(starter)
    assert data["on"] == ["push", "repository_dispatch"]
    assert data["permissions"] == {"checks": "write", "actions": "read", "contents": "read"}
    job = data["jobs"]["run-autograding-tests"]
    assert job["runs-on"] == "ubuntu-latest" and "github-classroom[bot]" in job["if"]
    steps = job["steps"]
    assert steps[0]["uses"].startswith("actions/checkout@")
    assert any(step.get("run") == "python -m pip install --quiet ." for step in steps)
    graded = graded_steps(starter)
    for step in graded:
        assert {"test-name", "command", "timeout", "max-score"} <= set(step["with"])
    reporter = steps[-1]
    assert reporter["uses"] == REPORTER
    ids = [step["id"] for step in graded]
    assert reporter["with"]["runners"].split(",") == ids
    assert reporter["env"] == {f"{step_id.upper()}_RESULTS": f"${{{{steps.{step_id}.outputs.result}}}}" for step_id in ids}


def test_points_are_the_public_points_of_each_function(starter):
    public = collect(get_assignment(ASSIGNMENT), ("public",))
    by_function = {step["with"]["test-name"]: float(step["with"]["max-score"]) for step in graded_steps(starter)}
    assert set(by_function) == {test.function for test in public}
    for function, points in by_function.items():
        assert points == sum(test.points for test in public if test.function == function)


def test_starter_is_the_student_release_plus_the_workflow(starter):
    assert (starter / "exercises" / f"{ASSIGNMENT}.py").is_file() and (starter / "pyproject.toml").is_file()
    assert not (starter / "grader" / "assignments" / ASSIGNMENT / "hidden").exists()
    assert not (starter / "solutions").exists()
    assert "GitHub Classroom" in (starter / "README.md").read_text(encoding="utf-8")
    assert ".venv/" in (starter / ".gitignore").read_text(encoding="utf-8")


@pytest.mark.slow
def test_workflow_commands_score_the_stub_a_bug_and_the_reference(starter, tmp_path):
    repository = tmp_path / "repository"
    shutil.copytree(starter, repository)
    located = subprocess.run([sys.executable, "-c", "import grader, grader.paths as p; print(grader.__file__, p.solutions_dir())"],
                             cwd=repository, env=dict(os.environ, PYTHONPATH=str(repository)),
                             capture_output=True, text=True, check=True)
    assert located.stdout.split() == [str(repository / "grader" / "__init__.py"), "None"]
    total = sum(float(step["with"]["max-score"]) for step in graded_steps(repository))

    assert sum(run_like_the_command_grader(repository).values()) == 0  # the untouched stub

    exercise = repository / "exercises" / f"{ASSIGNMENT}.py"
    reference = (PROJECT / "solutions" / f"{ASSIGNMENT}.py").read_text(encoding="utf-8")
    exercise.write_text(reference.replace("/ np.sqrt(d_k)", ""), encoding="utf-8")  # attention without the scale
    earned = run_like_the_command_grader(repository)
    assert earned["softmax"] > 0 and earned["scaled-dot-product-attention"] == 0 and earned["forward"] == 0

    exercise.write_text(reference, encoding="utf-8")
    assert sum(run_like_the_command_grader(repository).values()) == total


def test_mha_grade_of_collected_repositories_grades_the_script(starter, tmp_path):
    """A clone holds exercises/<a>.py and exercises/notebooks/<a>.ipynb: the script is what the student filled in."""
    from grader.batch.run import grade_class
    from grader.batch.settings import GradingRun

    repositories = tmp_path / "student-repos"
    shutil.copytree(starter, repositories / "alice-mha")
    shutil.copy(PROJECT / "solutions" / f"{ASSIGNMENT}.py", repositories / "alice-mha" / "exercises" / f"{ASSIGNMENT}.py")
    summary = grade_class(run=GradingRun(submissions=repositories, out=tmp_path / "graded", assignment=ASSIGNMENT, jobs=1))
    import json

    (result,) = json.loads((tmp_path / "graded" / "results.json").read_text(encoding="utf-8"))
    assert result["submission"] == f"alice-mha/exercises/{ASSIGNMENT}.py"
    assert result["score"] == result["max_score"] and summary.students == 1


def test_a_student_who_worked_in_the_notebook_earns_the_steps_and_the_grade(starter, tmp_path):
    """The script left as handed out, the notebook completed: the workflow and `mha grade` grade the notebook."""
    import json

    import nbformat
    from click.testing import CliRunner

    from grader.cli import root

    repositories = tmp_path / "student-repos"
    repository = repositories / "bo-mha"
    shutil.copytree(starter, repository)
    notebook_path = repository / "exercises" / "notebooks" / f"{ASSIGNMENT}.ipynb"
    notebook = nbformat.read(notebook_path, as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell((PROJECT / "solutions" / f"{ASSIGNMENT}.py").read_text("utf-8")))
    nbformat.write(notebook, notebook_path)
    total = sum(float(step["with"]["max-score"]) for step in graded_steps(repository))
    assert sum(run_like_the_command_grader(repository).values()) == total
    done = CliRunner().invoke(root, ["grade", str(repositories), "--out", str(tmp_path / "graded"), "--jobs", "1"])
    assert done.exit_code == 0, done.output
    (result,) = json.loads((tmp_path / "graded" / "results.json").read_text(encoding="utf-8"))
    assert result["file"] == f"bo-mha/exercises/notebooks/{ASSIGNMENT}.ipynb"
    assert f"bo-mha/exercises/{ASSIGNMENT}.py" in result["set_aside"]  # beside the untouched Chinese notebook
    assert result["score"] == result["max_score"]
