"""The mistakes two students share, and how rare they are in the class: from ``mha grade``'s results.

Two correct ``softmax`` functions look alike because there are few ways to
write one; two students who both divide by ``sqrt(seq)`` where nobody else
does did not get there independently as often. A student's marks are:

- ``mistake``: each catalog id diagnosed (``misconceptions``);
- ``failure``: each check failed without a catalog id (a wrong value, shape or
  type no known mistake explains), by the check and its generic outcome: the
  same unexplained wrong answer to the same check.

Only rare marks count: one held by at most ``max(2, RARE_SHARE * class)``
students. Each raises the pair's score by ``BOOST * 2 / holders`` of what is
left to 1 (a mark only these two have adds the most).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from grader.errors import UsageError
from grader.results import GENERIC_OUTCOMES

RARE_SHARE = 0.1
BOOST = 0.25


@dataclass(frozen=True)
class SharedMistake:
    kind: str  # "mistake" (a catalog id) or "failure" (a check failed with no catalog id)
    key: str  # the catalog id, or the check's name
    outcome: str  # for a failure: the generic outcome (numeric-mismatch...); for a mistake, the id again
    holders: int  # students of the class with it

    def to_dict(self) -> dict:
        return {"kind": self.kind, "id": self.key, "outcome": self.outcome, "students_with_it": self.holders}


def read_results(path: Path) -> list[dict]:
    """The result objects of a results.json written by ``mha grade``."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as bad:
        raise UsageError(f"cannot read the results {path} ({bad}); pass the results.json of `mha grade`") from None
    if not isinstance(data, list) or not all(isinstance(item, dict) and "student" in item for item in data):
        raise UsageError(f"{path} is not a results.json of `mha grade` (a list of results, each with a student)")
    return data


def marks(result: dict) -> set[tuple[str, str, str]]:
    """What a result says went wrong, as (kind, key, outcome) marks."""
    found = {("mistake", str(key), str(key)) for key in result.get("misconceptions") or ()}
    for test in result.get("tests") or ():
        if not isinstance(test, dict) or test.get("outcome") in ("passed", "timeout", None):
            continue
        misconception = test.get("misconception")
        if misconception is None or misconception in GENERIC_OUTCOMES:
            if misconception not in ("not-implemented", "timeout", "load-error"):
                found.add(("failure", str(test.get("name", "?")), str(misconception or test.get("outcome"))))
    return found


@dataclass(frozen=True)
class MistakeIndex:
    """Every rare mark of the class, with its holders."""

    holders: dict[tuple[str, str, str], tuple[int, ...]]  # mark -> indices of the students with it

    def shared(self, first: int, second: int, by_student: list[set]) -> tuple[SharedMistake, ...]:
        common = by_student[first] & by_student[second]
        return tuple(sorted((SharedMistake(kind, key, outcome, len(self.holders[(kind, key, outcome)]))
                             for kind, key, outcome in common if (kind, key, outcome) in self.holders),
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
    """How much the shared rare marks add, as a share of what is left to 1."""
    left = 1.0
    for mistake in shared:
        left *= 1.0 - BOOST * 2.0 / mistake.holders
    return 1.0 - left
