"""Which questions a quiz or a sheet poses: sampled from the bank, due for review, or linked to mistakes.

No prompts here: class grading (``homework`` -> ``sheets``) uses this without the interactive quiz.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Sequence

from grader.content.usage import usage_error
from grader.practice.bank import Bank, PosedQuestion, choose_questions, questions_for_misconception
from grader.practice.review import Progress


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


def linked_question_ids(misconceptions: Iterable[str]) -> list[str]:
    """The questions probing any of ``misconceptions``, each once, in catalog order given."""
    ids: list[str] = []
    for misconception in misconceptions:
        for question in questions_for_misconception(misconception):
            if question.id not in ids:
                ids.append(question.id)
    return ids


def misconceptions_in_feedback(path: Path, *, lang: str = "en") -> list[str]:
    """Catalog ids found in a result JSON (``mha check --json``, ``results.json``),
    or found by checking a submission file (``.py`` / ``.ipynb``) now."""
    if path.suffix in (".py", ".ipynb"):
        from grader.grading.grade import grade_submission

        return list(grade_submission(path=path, lang=lang).misconceptions)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise usage_error("not_result_json", path=path, error=f"{type(error).__name__}: {error}") from None
    results = data if isinstance(data, list) else [data]
    found: list[str] = []
    for result in results:
        if not isinstance(result, dict) or not isinstance(result.get("misconceptions"), list):
            raise usage_error("result_without_misconceptions", path=path)
        found.extend(item for item in result["misconceptions"] if item not in found)
    return found
