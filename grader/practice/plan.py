"""Which questions a quiz or a sheet poses: sampled from the bank, due for review, or linked to mistakes.

No prompts here: class grading (``homework`` -> ``sheets``) uses this without the interactive quiz.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from grader.errors import UsageError
from grader.practice.bank import Bank, PosedQuestion, Question, questions_for_misconception
from grader.practice.review import Progress


def choose_questions(*, bank: Bank, count: int, seed: int, topics: Iterable[str] = (),
                     levels: Iterable[str] = (), only: Sequence[str] | None = None) -> list[PosedQuestion]:
    """Pose ``count`` questions drawn with ``seed``.

    ``only`` (question ids, e.g. due cards or linked questions) keeps its order;
    otherwise questions are sampled from the topics and levels asked for.
    """
    rng = np.random.default_rng(seed)
    if only is not None:
        pool = [bank.get(question_id) for question_id in only]
        pool = [q for q in pool if _matches(q, set(topics), set(levels))][:count]
    else:
        candidates = bank.select(topics=topics, levels=levels)
        picked = rng.permutation(len(candidates))[:count]
        pool = [candidates[int(index)] for index in picked]
    return [question.pose(rng) for question in pool]


def plan_quiz(*, bank: Bank, count: int, seed: int, topics: Iterable[str] = (),
              levels: Iterable[str] = (), review: Progress | None = None,
              misconceptions: Sequence[str] | None = None) -> list[PosedQuestion]:
    """The questions of one session: due cards (``review``), questions linked to
    ``misconceptions``, or a fresh sample of the bank."""
    only = None
    if review is not None:
        known = {question.id for question in bank.questions}
        only = [card.question for card in review.due(known=known)]
    elif misconceptions is not None:
        only = linked_question_ids(misconceptions)
    return choose_questions(bank=bank, count=count, seed=seed, topics=topics, levels=levels, only=only)


def misconceptions_in_feedback(path: Path, *, lang: str = "en") -> list[str]:
    """Catalog ids found in a result JSON (``mha check --json``, ``results.json``),
    or found by checking a submission file (``.py`` / ``.ipynb``) now."""
    if path.suffix in (".py", ".ipynb"):
        from grader.grading.grade import grade_submission

        return list(grade_submission(path=path, lang=lang).misconceptions)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UsageError(f"{path}: not a result JSON ({error}); "
                         "save one with `mha check --json > result.json`") from None
    results = data if isinstance(data, list) else [data]
    found: list[str] = []
    for result in results:
        if not isinstance(result, dict) or not isinstance(result.get("misconceptions"), list):
            raise UsageError(f"{path}: expected result objects with a 'misconceptions' list")
        found.extend(item for item in result["misconceptions"] if item not in found)
    return found


def linked_question_ids(misconceptions: Iterable[str]) -> list[str]:
    """The questions probing any of ``misconceptions``, each once, in catalog order given."""
    ids: list[str] = []
    for misconception in misconceptions:
        for question in questions_for_misconception(misconception):
            if question.id not in ids:
                ids.append(question.id)
    return ids


def _matches(question: Question, topics: set[str], levels: set[str]) -> bool:
    return (not topics or question.topic in topics) and (not levels or question.level in levels)
