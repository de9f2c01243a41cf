"""Start a new exercise from the template: ``python -m grader.authoring.new_exercise NAME``.

Writes the exercise's folder ``grader/assignments/NAME/`` (its spec, cases and
twins, public and hidden checks, check titles, catalog entries and mutant
library, from ``grader/authoring/templates/exercise/folder/``), its reference
``solutions/NAME.py``, the stub ``exercises/NAME.py`` generated from that
reference, and the shipped public cases. The result is a complete, tiny
exercise (``attention_scores``: the scaled scores of attention) that
``mha check``, ``mha grade`` and ``mha audit`` grade at once; make it yours
from there, step by step as docs/design-notes.md ("Adding an exercise") says.

In the template, ``@NAME@`` stands for the exercise's name, ``@ID@`` for the
prefix of its catalog ids (the name with dashes) and ``@POSITION@`` for its
place in the curriculum.
"""

from __future__ import annotations

import argparse
import importlib
import keyword
import re
from dataclasses import dataclass
from pathlib import Path

from grader.errors import UsageError
from grader.paths import ASSIGNMENTS_DIR, PACKAGE_DIR, PROJECT_DIR, exercises_dir, solutions_dir

TEMPLATE = PACKAGE_DIR / "authoring" / "templates" / "exercise"
_NAME = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")


@dataclass(frozen=True)
class NewExercise:
    name: str
    folder: Path
    solution: Path
    stub: Path
    files: tuple[str, ...]  # written into ``folder``, relative to it


def placeholders(name: str, position: int) -> dict[str, str]:
    return {"@NAME@": name, "@ID@": name.replace("_", "-"), "@POSITION@": str(position)}


def fill(text: str, values: dict[str, str]) -> str:
    for placeholder, value in values.items():
        text = text.replace(placeholder, value)
    return text


def create_exercise(*, name: str, position: int | None = None) -> NewExercise:
    """Write a new exercise ``name`` from the template; UsageError for a bad or taken name."""
    from grader.grading.assignment import ASSIGNMENTS, read_spec
    from grader.grading.store import save_cases
    from grader.stubs import generate_stub

    if not _NAME.match(name) or keyword.iskeyword(name):
        raise UsageError(f"{name!r} cannot name an exercise: use lower_case_with_underscores, e.g. rotary_embedding")
    folder = ASSIGNMENTS_DIR / name
    solutions, exercises = solutions_dir() or PROJECT_DIR / "solutions", exercises_dir()
    solution, stub = solutions / f"{name}.py", exercises / f"{name}.py"
    taken = [path for path in (folder, solution, stub) if path.exists()]
    if taken:
        raise UsageError(f"{taken[0]} already exists; choose another name for the new exercise")
    values = placeholders(name, position if position is not None
                          else max((exercise.position for exercise in ASSIGNMENTS.values()), default=0) + 1)
    written = []
    for source in sorted((TEMPLATE / "folder").rglob("*")):
        if source.is_dir() or "__pycache__" in source.parts or source.suffix == ".pyc":
            continue
        relative = fill(source.relative_to(TEMPLATE / "folder").as_posix(), values)
        target = folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(fill(source.read_text(encoding="utf-8"), values), encoding="utf-8")
        written.append(relative)
    solutions.mkdir(parents=True, exist_ok=True)
    reference = fill((TEMPLATE / "solution.py").read_text(encoding="utf-8"), values)
    solution.write_text(reference, encoding="utf-8")
    exercises.mkdir(parents=True, exist_ok=True)
    stub.write_text(generate_stub(reference, origin=str(solution)), encoding="utf-8")
    importlib.invalidate_caches()  # the new package was written after the interpreter looked
    exercise = read_spec(folder)
    save_cases(exercise.module().public_cases(), exercise.public_cases_file)
    written.append(exercise.public_cases_file.name)
    return NewExercise(name=name, folder=folder, solution=solution, stub=stub, files=tuple(sorted(written)))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m grader.authoring.new_exercise", description=__doc__.split("\n")[0])
    parser.add_argument("name", help="the exercise's name, lower_case_with_underscores (its folder and module)")
    parser.add_argument("--position", type=int, default=None,
                        help="where it comes in the curriculum (default: after every other exercise)")
    args = parser.parse_args(argv)
    try:
        made = create_exercise(name=args.name, position=args.position)
    except UsageError as error:
        parser.exit(2, f"error: {error}\n")
    print(f"wrote {made.folder}/ ({len(made.files)} files), {made.solution} and {made.stub}")
    print(f"next: mha check {made.stub} --assignment {made.name}; mha audit --assignment {made.name}; "
          "then docs/design-notes.md, 'Adding an exercise'")


if __name__ == "__main__":
    main()
