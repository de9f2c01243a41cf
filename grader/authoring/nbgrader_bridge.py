"""Write ``mha grade`` scores into an nbgrader gradebook, so formgrader shows them.

Scores land in the autograded test cells of the course notebook that
``mha release --nbgrader`` writes: one cell per group of functions
(``check-softmax``, ``check-split_heads-combine_heads``...), each given the
points the student earned on those functions' checks. A gradebook that does
not know the assignment yet gets it, with those cells, so instructors who
collect scripts rather than notebooks can still use formgrader. Uses
nbgrader's own ``Gradebook`` API; nothing here touches the database directly.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

from grader.errors import ConfigError
from grader.results import SubmissionResult


@dataclass(frozen=True)
class GradebookWrite:
    """What ``write_to_gradebook`` did."""

    db: Path
    assignment: str
    students: tuple[str, ...]  # whose scores were written
    created_assignment: bool  # the gradebook did not know the assignment before
    added: tuple[str, ...] = ()  # students added to the roster (add_students)
    skipped: tuple[str, ...] = ()  # graded, but not on the roster, so not written

    def to_dict(self) -> dict:
        return {"db": str(self.db), "assignment": self.assignment, "students": list(self.students),
                "created_assignment": self.created_assignment, "added": list(self.added),
                "skipped": list(self.skipped)}


def check_groups(assignment: str) -> dict[str, tuple[str, ...]]:
    """Test cell name -> the functions whose checks it holds, as in the course notebook."""
    from grader.authoring.notebooks import check_cell_id
    from grader.authoring.tutorial import load_tutorial

    tutorial = load_tutorial()
    if tutorial.assignment == assignment:
        groups = [cell.functions for cell in tutorial.cells_of("nbgrader") if cell.kind == "check"]
    else:  # no course notebook for this exercise: one cell per function
        from grader.grading.assignment import get_assignment

        groups = [(name,) for name in get_assignment(assignment).functions]
    return {check_cell_id(group): group for group in groups}


def write_to_gradebook(*, db: Path, assignment: str, results: list[SubmissionResult],
                       notebook: str | None = None, add_students: bool = False) -> GradebookWrite:
    """Record each result's points per test cell as the autograded score of that cell.

    ``db`` is an nbgrader ``gradebook.db``; ``notebook`` is the notebook's name
    in it (default: the assignment's name, as in ``mha release --nbgrader``).
    Only students on the gradebook's roster are written (the others are
    returned as ``skipped``) unless ``add_students``, which adds them;
    submissions are created when missing; an existing score is overwritten. Raises ConfigError when the gradebook's cells do not match
    the exercise's checks, or a result covers other points than those cells.
    """
    from nbgrader.api import Gradebook, MissingEntry

    db = Path(db)
    if not db.is_file():
        raise ConfigError(f"--nbgrader-db {db}: no such file; give the gradebook.db of an nbgrader course")
    notebook = notebook or assignment
    groups = check_groups(assignment)
    maxima = _group_maxima(assignment, groups)
    created = False
    with warnings.catch_warnings(), Gradebook(f"sqlite:///{db.resolve()}") as gradebook:
        # nbgrader's own add_submission trips SQLAlchemy's autoflush warnings; the rows are written all the same
        warnings.filterwarnings("ignore", message=".*not in session.*")
        try:
            known = gradebook.find_notebook(notebook, assignment)
        except MissingEntry:
            known = _create_notebook(gradebook, assignment, notebook, maxima)
            created = True
        cells = {cell.name: cell for cell in known.grade_cells}
        ours = {name: maxima[name] for name in cells if name in groups}
        if set(ours) != set(groups) - {name for name, points in maxima.items() if points == 0}:
            raise ConfigError(f"--nbgrader-db {db}: the test cells of notebook {notebook!r} "
                              f"({', '.join(sorted(cells)) or 'none'}) are not the checks of {assignment} "
                              f"({', '.join(groups)}); release the course with `mha release --nbgrader`")
        roster = {student.id for student in gradebook.students}
        written, added, skipped = [], [], []
        for result in results:
            _check_result(result, groups, ours, db)
            if result.student not in roster:
                if not add_students:
                    skipped.append(result.student)
                    continue
                added.append(result.student)
            written.append(result.student)
            gradebook.update_or_create_student(result.student)
            gradebook.update_or_create_submission(assignment, result.student)
            for name, functions in groups.items():
                if name not in cells:
                    continue
                grade = gradebook.find_grade(name, notebook, assignment, result.student)
                grade.auto_score = float(sum(t.score for t in result.tests if t.function in functions))
            gradebook.db.commit()
    return GradebookWrite(db=db, assignment=assignment, students=tuple(written), created_assignment=created,
                          added=tuple(added), skipped=tuple(skipped))


def _group_maxima(assignment: str, groups: dict[str, tuple[str, ...]]) -> dict[str, float]:
    from grader.grading.assignment import get_assignment
    from grader.grading.runner import collect

    exercise = get_assignment(assignment)
    tests = collect(exercise, ("public", "hidden"))
    return {name: float(sum(t.points for t in tests if t.function in functions)) for name, functions in groups.items()}


def _create_notebook(gradebook, assignment: str, notebook: str, maxima: dict[str, float]):
    gradebook.update_or_create_assignment(assignment)
    gradebook.add_notebook(notebook, assignment)
    for name, points in maxima.items():
        gradebook.add_grade_cell(name, notebook, assignment, max_score=points, cell_type="code")
    return gradebook.find_notebook(notebook, assignment)


def _check_result(result: SubmissionResult, groups: dict, maxima: dict, db: Path) -> None:
    """A result must have been graded on the same checks the gradebook counts."""
    if result.status != "graded":
        return  # a submission that could not be loaded scores 0 everywhere
    for name, functions in groups.items():
        earned_max = sum(t.max_score for t in result.tests if t.function in functions)
        if name in maxima and abs(earned_max - maxima[name]) > 1e-9:
            raise ConfigError(f"--nbgrader-db {db}: {result.student}'s result holds {earned_max:g} points for "
                              f"{', '.join(functions)} but the gradebook cell {name} is worth {maxima[name]:g}; "
                              "grade with --visibility all")
