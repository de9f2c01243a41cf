"""The figures of a class run, kept as results stream past: per check, per mistake, per problem.

``ClassTally`` takes results one at a time (memory grows with the number of
checks, not of students, apart from one float per score) and keeps what the
report and the summary need: for every check its pass rate and its
discrimination (the correlation between passing it and the score on all the
other checks, the classic item-analysis figure: near 0 or negative means the
check does not separate strong from weak submissions), the misconceptions
with the share of students who made each, and the submissions that errored
or timed out. ``BatchSummary`` is what a run (or a merge) hands the verb that
prints it. Foundation module: imports only ``grader.results``, so the
renderers and ``mha merge`` need not import the batch.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from grader.results import SubmissionResult


@dataclass
class CheckTally:
    name: str
    function: str
    visibility: str
    max_score: float
    attempts: int = 0
    passes: int = 0
    rest_sum: float = 0.0  # sums for the item-rest correlation
    rest_squares: float = 0.0
    pass_rest: float = 0.0

    @property
    def pass_rate(self) -> float:
        return self.passes / self.attempts if self.attempts else 0.0

    @property
    def discrimination(self) -> float | None:
        n, x, r = self.attempts, self.passes, self.rest_sum
        spread = (n * x - x * x) * (n * self.rest_squares - r * r)
        if n < 3 or spread <= 1e-12:
            return None
        return (n * self.pass_rest - x * r) / math.sqrt(spread)


@dataclass(frozen=True)
class RosterRow:
    """One student as the report's roster shows them."""

    student: str
    status: str  # graded or error
    score: float  # the checks' score
    final: float  # after adjustments
    max_score: float
    misconceptions: tuple[str, ...]
    adjustments: tuple[str, ...] = ()  # their reasons
    timed_out: bool = False


@dataclass
class ClassTally:
    """Running figures of a class, fed one result at a time."""

    students: int = 0
    graded: int = 0
    max_score: float = 0.0
    scores: list[float] = field(default_factory=list)
    checks: dict[str, CheckTally] = field(default_factory=dict)
    misconceptions: Counter = field(default_factory=Counter)
    errored: list[tuple[str, str]] = field(default_factory=list)  # (student, reason); students = graded + errored
    timed_out: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)  # graded ones: (student, functions)
    isolation: Counter = field(default_factory=Counter)
    roster: list[RosterRow] = field(default_factory=list)  # every student, in the order added
    adjusted: int = 0  # students whose score an adjustment changed or annotated
    set_aside: list[tuple[str, str, tuple[str, ...]]] = field(default_factory=list)  # (student, file, others)

    def add(self, result: SubmissionResult) -> None:
        self.students += 1
        if result.set_aside:
            self.set_aside.append((result.student, result.file or "", tuple(result.set_aside)))
        adjustments = tuple(item.reason or item.kind for item in result.adjustments)
        self.adjusted += bool(adjustments)
        self.roster.append(RosterRow(
            student=result.student, status=result.status, score=float(result.score), final=float(result.final),
            max_score=float(result.max_score or 0.0), misconceptions=tuple(result.misconceptions),
            adjustments=adjustments, timed_out=any(test.outcome == "timeout" for test in result.tests)))
        self.max_score = max(self.max_score, float(result.max_score or 0.0))
        if result.isolation:
            self.isolation[result.isolation] += 1
        if result.status != "graded":  # an error, whatever its cause (a load that took too long too)
            self.errored.append((result.student, result.error or ""))
            return
        self.graded += 1
        score = float(result.score)
        self.scores.append(score)
        self.misconceptions.update(set(result.misconceptions))
        slow = tuple(dict.fromkeys(test.function for test in result.tests if test.outcome == "timeout"))
        if slow:
            self.timed_out.append((result.student, slow))
        for test in result.tests:
            check = self.checks.get(test.name)
            if check is None:
                check = self.checks[test.name] = CheckTally(test.name, test.function, test.visibility, test.max_score)
            passed = 1.0 if test.outcome == "passed" else 0.0
            rest = score - float(test.score)
            check.attempts += 1
            check.passes += int(passed)
            check.rest_sum += rest
            check.rest_squares += rest * rest
            check.pass_rest += passed * rest

    @property
    def mean(self) -> float | None:
        return statistics.fmean(self.scores) if self.scores else None

    @property
    def median(self) -> float | None:
        return statistics.median(self.scores) if self.scores else None

    def common_misconceptions(self, limit: int = 10) -> list[tuple[str, int, float]]:
        """(id, students, share of graded students), most common first, ties by id (the same every run)."""
        ranked = sorted(self.misconceptions.items(), key=lambda item: (-item[1], item[0]))[:limit]
        return [(key, count, count / self.graded) for key, count in ranked]


@dataclass(frozen=True)
class BatchSummary:
    """What one `mha grade` (or `mha merge`) run did, for the summary it prints."""

    out: Path
    students: int  # in this run (this shard)
    graded_now: int  # graded by this run; the rest came from an earlier, resumed one
    ignored: tuple[str, ...]  # entries of SUBMISSIONS that are not submissions
    tally: ClassTally
    elapsed: float
    previous: Path | None = None  # where --overwrite moved the earlier run in ``out``
    unmatched_adjustments: tuple[str, ...] = ()  # students of --adjust that are not in the class
    regraded: int = 0  # on --resume: submissions whose content changed since the earlier run, graded again
