"""Regenerate every exercise's shipped public cases: ``python -m grader.authoring.cases``.

Run it after changing an exercise's case builder or twins; ``tests/test_cases.py``
fails while a shipped file is out of date.
"""

from __future__ import annotations

from grader.grading.assignment import ASSIGNMENTS
from grader.grading.store import save_cases


def main() -> None:
    for assignment in ASSIGNMENTS.values():
        save_cases(assignment.module().public_cases(), assignment.public_cases_file)
        print(f"wrote {assignment.public_cases_file}")


if __name__ == "__main__":
    main()
