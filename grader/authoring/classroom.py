"""``mha release --github-classroom``: a starter repository that GitHub Classroom grades on every push.

The repository is the student release (``grader.authoring.release``, made by the verb) plus
``.github/workflows/classroom.yml``: one step installs the release, then one
``classroom-resources/autograding-command-grader`` step per graded function
runs ``mha check --function NAME`` and is worth that function's public points
when every public check of it passes (the command grader gives all or
nothing, on the exit status); ``autograding-grading-reporter`` adds the steps
up into the score GitHub Classroom shows. Only the public checks can run
there: the repository is the student's. The instructor's grade comes from
``mha grade`` on the collected repositories, hidden checks included.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from grader.paths import DEFAULT_ASSIGNMENT

COMMAND_GRADER = "classroom-resources/autograding-command-grader@v1"
REPORTER = "classroom-resources/autograding-grading-reporter@v1"
PYTHON_VERSION = "3.11"
STEP_TIMEOUT_MINUTES = 5
GITIGNORE = ".venv/\n__pycache__/\n*.pyc\n.ipynb_checkpoints/\n"


@dataclass(frozen=True)
class GradedStep:
    """One autograding step: the public checks of one function."""

    id: str  # the step id; the reporter reads ``<ID>_RESULTS``
    function: str
    points: float
    command: str

    def to_dict(self) -> dict:
        return {"id": self.id, "function": self.function, "points": self.points, "command": self.command}


@dataclass(frozen=True)
class ClassroomStarter:
    folder: Path
    workflow: Path
    tests: tuple[GradedStep, ...]

    def to_dict(self) -> dict:
        return {"folder": str(self.folder), "workflow": str(self.workflow),
                "tests": [test.to_dict() for test in self.tests]}


def graded_steps(assignment: str, lang: str) -> tuple[GradedStep, ...]:
    """One step per function that has public checks, in the order the computation uses them."""
    from grader.grading.assignment import get_assignment
    from grader.grading.runner import collect

    exercise = get_assignment(assignment)
    public = collect(exercise, ("public",))
    steps = []
    for function in exercise.functions:
        points = float(sum(test.points for test in public if test.function == function))
        if points:
            step_id = re.sub(r"[^a-z0-9]+", "-", function.lower()).strip("-")
            # the folder, not one file: the script or the notebook, whichever the student worked on
            command = f"mha check exercises --assignment {assignment} --function {function} --lang {lang}"
            steps.append(GradedStep(id=step_id, function=function, points=points, command=command))
    return tuple(steps)


def workflow_text(steps: tuple[GradedStep, ...], assignment: str) -> str:
    """``.github/workflows/classroom.yml`` in the shape GitHub Classroom's own template has."""
    quote = json.dumps  # a JSON string is a YAML string too
    lines = [
        "# GitHub Classroom autograding, written by `mha release --github-classroom`.",
        f"# One step per function of {assignment}: its public checks, all or nothing.",
        "name: Autograding Tests",
        "'on':",
        "- push",
        "- repository_dispatch",
        "permissions:",
        "  checks: write",
        "  actions: read",
        "  contents: read",
        "jobs:",
        "  run-autograding-tests:",
        "    runs-on: ubuntu-latest",
        "    if: github.actor != 'github-classroom[bot]'",
        "    steps:",
        "    - name: Checkout code",
        "      uses: actions/checkout@v4",
        "    - name: Set up Python",
        "      uses: actions/setup-python@v5",
        "      with:",
        f"        python-version: {quote(PYTHON_VERSION)}",
        "    - name: Install mha-lab",
        "      run: python -m pip install --quiet .",
    ]
    for step in steps:
        lines += [
            f"    - name: {quote(step.function)}",
            f"      id: {step.id}",
            f"      uses: {COMMAND_GRADER}",
            "      with:",
            f"        test-name: {quote(step.function)}",
            f"        command: {quote(step.command)}",
            f"        timeout: {STEP_TIMEOUT_MINUTES}",
            f"        max-score: {step.points:g}",
        ]
    lines += [
        "    - name: Autograding Reporter",
        f"      uses: {REPORTER}",
        "      env:",
        *[f"        {step.id.upper()}_RESULTS: \"${{{{steps.{step.id}.outputs.result}}}}\"" for step in steps],
        "      with:",
        f"        runners: {','.join(step.id for step in steps)}",
    ]
    return "\n".join(lines) + "\n"


def add_classroom_autograding(*, folder: Path, assignment: str = DEFAULT_ASSIGNMENT,
                              lang: str = "en") -> ClassroomStarter:
    """Make the student release in ``folder`` a starter repository: the workflow, a README section, a .gitignore.

    ``folder`` is what ``grader.authoring.release.build_student_release`` wrote
    (``mha release --github-classroom`` does both).
    """
    from grader.authoring.release import RELEASE_TEXTS

    folder = Path(folder)
    steps = graded_steps(assignment, lang)
    workflow = folder / ".github" / "workflows" / "classroom.yml"
    workflow.parent.mkdir(parents=True, exist_ok=True)
    workflow.write_text(workflow_text(steps, assignment), encoding="utf-8")
    (folder / ".gitignore").write_text(GITIGNORE, encoding="utf-8")
    table = "\n".join(f"| `{step.function}` | {step.points:g} |" for step in steps)
    section = RELEASE_TEXTS.say("classroom_readme", lang, assignment=assignment, table=table,
                                                           points=sum(step.points for step in steps))
    readme = folder / "README.md"
    readme.write_text(readme.read_text(encoding="utf-8") + "\n" + section.strip("\n") + "\n", encoding="utf-8")
    return ClassroomStarter(folder=folder, workflow=workflow, tests=steps)
