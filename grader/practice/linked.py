"""The bank question a check names for each mistake it shows, without loading the bank each time.

``mha check`` names one question per mistake (``mha quiz --question ID``
drills it). Loading and validating the whole bank for that costs more than
the rest of a check's output, so the index of catalog id -> question ids is
kept in the user's cache (``grader.files.read_cached``) under the hashes of
the bank's files, and rebuilt from the validated bank whenever one of them
changed. The order is ``bank.questions_for_misconception``'s: basic first.
"""

from __future__ import annotations

import functools
import hashlib

from grader import __version__
from grader.files import read_cached, write_cached
from grader.paths import QUESTIONS_DIR


def linked_question(misconception: str) -> str | None:
    """The id of a bank question that probes ``misconception``, if the bank has one."""
    linked = linked_question_index().get(misconception)
    return linked[0] if linked else None


@functools.cache
def linked_question_index() -> dict[str, list[str]]:
    """Catalog id -> the ids of the shipped questions that probe it, basic ones first."""
    key = {"grader": __version__, "files": {path.name: hashlib.sha256(path.read_bytes()).hexdigest()
                                            for path in sorted(QUESTIONS_DIR.glob("*.toml"))}}
    kept = read_cached("linked-questions", key)
    if kept is not None and all(isinstance(ids, list) for ids in kept.values()):
        return kept
    from grader.practice.bank import LEVELS, load_bank

    index: dict[str, list[str]] = {}
    questions = sorted(load_bank(QUESTIONS_DIR).questions, key=lambda question: LEVELS.index(question.level))
    for question in questions:  # a stable sort: the bank's order within a level
        for misconception in question.misconceptions:
            index.setdefault(misconception, []).append(question.id)
    write_cached("linked-questions", key, index)
    return index
