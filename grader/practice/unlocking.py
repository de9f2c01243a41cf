"""Unlocking a function's checks by first answering what it must return.

Before ``mha check --unlock`` runs a function's checks for the first time,
the student answers one or two bank questions marked ``unlocks = [function]``
(e.g. the output shape of ``split_heads`` for given sizes). A wrong answer
shows why and asks again, with fresh numbers where the question is a
template. Unlocked functions are remembered in the user's data folder.
"""

from __future__ import annotations

import numpy as np

from grader.practice import answers as quiz_answers
from grader.i18n import pick
from grader.practice.bank import Question, default_bank
from grader.practice.session import Prompter
from grader.practice.texts import text
from grader.practice.user_data import read_document, write_document

UNLOCKED_FILE = "unlocked.json"
QUESTIONS_PER_UNLOCK = 2


def unlock_questions(function_name: str, rng: np.random.Generator) -> list[Question]:
    """Up to two questions about what ``function_name`` returns (empty if the bank has none)."""
    linked = [question for question in default_bank().questions if function_name in question.unlocks]
    order = rng.permutation(len(linked))[:QUESTIONS_PER_UNLOCK]
    return [linked[int(index)] for index in order]


def unlocked_functions() -> set[str]:
    return set(read_document(UNLOCKED_FILE, {"functions": []}).get("functions", []))


def is_unlocked(function_name: str) -> bool:
    return function_name in unlocked_functions()


def mark_unlocked(function_name: str) -> None:
    write_document(UNLOCKED_FILE, {"functions": sorted(unlocked_functions() | {function_name})})


def unlock_interactively(function_name: str, *, lang: str, prompter: Prompter,
                         rng: np.random.Generator) -> bool:
    """Ask until every unlock question of ``function_name`` is answered right.

    Returns True once unlocked (at once if it already was, or if the bank has
    no question for it), False if the student stopped answering.
    """
    if is_unlocked(function_name):
        return True
    questions = unlock_questions(function_name, rng)
    if questions:
        prompter.show(text("unlock_intro", lang, function=function_name))
    for question in questions:
        while True:
            posed = question.pose(rng)
            prompter.show(pick(posed.prompt, lang))
            if posed.question.code:
                prompter.show(posed.question.code)
            if posed.kind == "ordering":
                for index, step in enumerate(posed.options, start=1):
                    prompter.show(f"  {index}. {pick(step, lang)}")
            how = text(f"how.{posed.kind}", lang)
            given = prompter.ask(posed, lang, text("answer_prompt", lang, how=how))
            if given is None:
                return False
            verdict = quiz_answers.check(posed, given)
            if verdict.correct:
                prompter.show(text("right", lang))
                break
            prompter.show(text("invalid", lang, how=how) if not verdict.valid else
                          text("why", lang, explanation=pick(posed.explanation, lang)))
    mark_unlocked(function_name)
    prompter.show(text("unlock_done", lang, function=function_name))
    return True
