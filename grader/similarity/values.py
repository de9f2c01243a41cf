"""The same wrong values on the same public fixtures: what two students' code returns where both are wrong.

A graded run draws every input from the student's own seed, so two results
never hold comparable values. For the students whose results show a failure
no catalog id explains, their code is run once more on the shipped public
fixtures (the public checks of ``mha check``, in the same sandbox as grading,
SUBMISSIONS and the output folder hidden from the workers), and each check
that fails there contributes where its value first differs and the values
the student's code returned: two students whose unexplained bug returns the
very same wrong numbers on the same fixture rarely got there apart.
"""

from __future__ import annotations

from pathlib import Path

from grader.results import GENERIC_OUTCOMES

UNEXPLAINED = set(GENERIC_OUTCOMES) - {"not-implemented", "timeout", "load-error"}


def value_marks(result) -> set[tuple[str, str, str, str]]:
    """("values", check, "where = got", function) for each failed check of ``result`` no catalog id explains."""
    found = set()
    for test in result.tests:
        if test.outcome == "passed" or (test.misconception is not None and test.misconception not in UNEXPLAINED):
            continue
        for part in test.case_messages:
            if isinstance(part, dict) and part.get("key") == "case_first_difference":
                params = part.get("params") or {}
                found.add(("values", test.name, f"{params.get('row', '')} = {params.get('got_row', '')}",
                           test.root_cause or test.function))
    return found


def wrong_values(*, files: dict[str, Path], assignment: str, hidden: tuple[Path, ...], progress) -> dict[str, set]:
    """Run each student's file of ``files`` on the shipped public fixtures; their value marks, by student."""
    from grader.grading.grade import grade_submission
    from grader.sandbox.client import ForkServerError, hideable, start_server

    found: dict[str, set] = {}
    progress.begin("fixtures", len(files))
    try:  # one fork server for all of them, as a batch has; where it cannot start, each gets its own
        server = start_server(hidden=tuple(str(Path(folder).resolve()) for folder in hidden if hideable(folder)))
    except ForkServerError:
        server = None
    try:
        for student, path in files.items():
            result = grade_submission(path=path, assignment=assignment, visibility="public", student=student,
                                      server=server)
            found[student] = value_marks(result)
            progress.advance()
    finally:
        if server is not None:
            server.stop()
        progress.end()
    return found
