"""The mistakes two students share, and how rare they are in the class: from ``mha grade``'s results.

Two correct ``softmax`` functions look alike because there are few ways to
write one; two students who both divide by ``sqrt(seq)`` where nobody else
does did not get there independently as often. A student's marks are:

- ``mistake``: each catalog id diagnosed (``misconceptions``);
- ``failure``: each check failed without a catalog id (a wrong value, shape or
  type no known mistake explains), by the check and its generic outcome: the
  same unexplained wrong answer to the same check;
- ``values``: the very values such a check returned on a shipped public
  fixture (``grader.similarity.values``): the same wrong numbers.

Only rare marks count: one held by at most ``max(2, RARE_SHARE * class)``
students. One bug shows in many checks (a wrong softmax fails attention and
forward too), so the marks are grouped by the mistake: its catalog id, or for
failures and values the function the mistake is in (the check's root cause).
Each group raises the pair's score by ``BOOST[kind] * 2 / holders`` of what
is left to 1, its strongest mark only (a mark only these two have adds the
most; the same wrong numbers add more than the same failed check).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

from grader.results import GENERIC_OUTCOMES, SubmissionResult

RARE_SHARE = 0.1
BOOST = {"mistake": 0.25, "failure": 0.2, "values": 0.4}


@dataclass(frozen=True)
class SharedMistake:
    kind: str  # "mistake" (a catalog id), "failure" (a check failed with no catalog id), "values" (see values.py)
    key: str  # the catalog id, or the check's name
    outcome: str  # a failure's generic outcome (numeric-mismatch...); the wrong values; for a mistake, the id
    holders: int  # students of the class with it
    function: str = ""  # where the mistake is (a failure's or values' root cause); "" for a catalog id

    @property
    def group(self) -> tuple[str, str]:
        return ("mistake", self.key) if self.kind == "mistake" else ("function", self.function)

    def to_dict(self) -> dict:
        data = {"kind": self.kind, "id": self.key, "outcome": self.outcome, "students_with_it": self.holders}
        if self.function:
            data["function"] = self.function
        return data

    @classmethod
    def from_dict(cls, data: dict) -> SharedMistake:
        return cls(data["kind"], data["id"], data["outcome"], data["students_with_it"], data.get("function", ""))


def marks(result: SubmissionResult) -> set[tuple[str, str, str, str]]:
    """What a result says went wrong, as (kind, key, outcome, function) marks."""
    found = {("mistake", str(key), str(key), "") for key in result.misconceptions}
    for test in result.tests:
        if test.outcome in ("passed", "timeout", None):
            continue
        misconception = test.misconception
        if misconception is None or misconception in GENERIC_OUTCOMES:
            if misconception not in ("not-implemented", "timeout", "load-error"):
                found.add(("failure", str(test.name), str(misconception or test.outcome),
                           str(test.root_cause or test.function or "")))
    return found


@dataclass(frozen=True)
class MistakeIndex:
    """Every rare mark of the class, with its holders."""

    holders: dict[tuple[str, str, str, str], tuple[int, ...]]  # mark -> indices of the students with it

    def shared(self, first: int, second: int, by_student: list[set]) -> tuple[SharedMistake, ...]:
        common = by_student[first] & by_student[second]
        return tuple(sorted((SharedMistake(kind, key, outcome, len(self.holders[mark]), function)
                             for mark in common if mark in self.holders for kind, key, outcome, function in [mark]),
                            key=lambda mistake: (mistake.holders, mistake.kind, mistake.key)))

    def pairs(self):
        """Every pair of students sharing a rare mark."""
        for students in self.holders.values():
            for position, first in enumerate(students):
                for second in students[position + 1:]:
                    yield first, second


def index_mistakes(by_student: list[set], *, class_size: int) -> MistakeIndex:
    holders = defaultdict(list)
    for index, found in enumerate(by_student):
        for mark in found:
            holders[mark].append(index)
    limit = max(2, math.floor(RARE_SHARE * class_size))
    return MistakeIndex({mark: tuple(students) for mark, students in holders.items() if 2 <= len(students) <= limit})


def boost(shared: tuple[SharedMistake, ...]) -> float:
    """How much the shared rare marks add, as a share of what is left to 1: the strongest mark of each group."""
    strongest: dict[tuple[str, str], float] = {}
    for mistake in shared:
        value = BOOST[mistake.kind] * 2.0 / mistake.holders
        strongest[mistake.group] = max(value, strongest.get(mistake.group, 0.0))
    left = 1.0
    for value in strongest.values():
        left *= 1.0 - value
    return 1.0 - left
