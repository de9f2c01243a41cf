"""The same checks with no sandbox: import each submission and call it in this process.

This is the floor the sandbox is measured against: the suites, cases, twins
and diagnosis are exactly those of ``grade_submission``; only the calls go
straight to the imported module instead of through a confined worker. Never
do this with real student code.
"""

from __future__ import annotations

import time
from pathlib import Path

from grader.content.catalog import misconception_ids
from grader.grading.grade import plan_checks, run_checks
from grader.results import SubmissionResult, load_failure, summarize
from grader.sandbox.in_process import InProcessBox


def grade_in_process(path: Path, *, student: str, assignment: str = "multihead_attention",
                     visibility: str = "all") -> SubmissionResult:
    """``grade_submission``'s checks (``run_checks``: the same cases, drawn for ``student``, the same diagnosis),
    with the calls answered by the submission imported into this process."""
    plan = plan_checks(assignment=assignment, visibility=visibility, student=student)
    try:
        box = InProcessBox.load(path, name=f"bench_submission_{student}")
    except Exception as error:
        return load_failure(student=student, error=f"{type(error).__name__}: {error}", max_score=plan.max_score,
                            assignment=assignment)
    results = run_checks(box, plan=plan, visibility=visibility)
    return summarize(student=student, tests=results, max_score=plan.max_score, assignment=assignment,
                     catalog_ids=misconception_ids(), seed=plan.seed)


def grade_folder_in_process(folder: Path) -> tuple[float, dict[str, float]]:
    """Seconds to grade every ``*.py`` of ``folder`` one after another; and the scores."""
    paths = sorted(Path(folder).glob("*.py"))
    started = time.perf_counter()
    scores = {path.stem: grade_in_process(path, student=path.stem).score for path in paths}
    return time.perf_counter() - started, scores
