"""The same checks with no sandbox: import each submission and call it in this process.

This is the floor the sandbox is measured against: the suites, cases, twins
and diagnosis are exactly those of ``grade_submission``; only the calls go
straight to the imported module instead of through a confined worker. Never
do this with real student code.
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path


from grader.grading.assignment import get_assignment
from grader.content.catalog import misconception_ids
from grader.grading.grade import VISIBILITIES
from grader.results import SubmissionResult, load_failure, summarize
from grader.grading.runner import collect, run_tests
from grader.seeding import student_seed
from grader.grading.student import StudentCode
from grader.sandbox.in_process import InProcessBox


def grade_in_process(path: Path, *, student: str, assignment: str = "multihead_attention",
                     visibility: str = "all") -> SubmissionResult:
    exercise = get_assignment(assignment)
    tests = collect(exercise, VISIBILITIES[visibility])
    max_score = float(sum(test.points for test in tests))
    seed = student_seed(student)
    spec = importlib.util.spec_from_file_location(f"bench_submission_{student}", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        return load_failure(student=student, error=f"{type(error).__name__}: {error}", max_score=max_score,
                            assignment=assignment)
    code = StudentCode(InProcessBox(module))
    fixtures = {"public": {"student": code, "cases": exercise.public_cases(), "seed": None},
                "hidden": {"student": code, "cases": exercise.build_hidden_cases(seed), "seed": seed}}
    results = run_tests(tests, fixtures=fixtures, assignment=exercise, lang="en")
    return summarize(student=student, tests=results, max_score=max_score, assignment=assignment,
                     catalog_ids=misconception_ids(), seed=seed)


def grade_folder_in_process(folder: Path) -> tuple[float, dict[str, float]]:
    """Seconds to grade every ``*.py`` of ``folder`` one after another; and the scores."""
    paths = sorted(Path(folder).glob("*.py"))
    started = time.perf_counter()
    scores = {path.stem: grade_in_process(path, student=path.stem).score for path in paths}
    return time.perf_counter() - started, scores
