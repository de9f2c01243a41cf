"""Unlocking a function's checks by first answering what it must return.

Before ``mha check --unlock`` runs a function's checks for the first time,
the student answers one bank question marked ``unlocks = [function]`` (e.g.
the output shape of ``split_heads`` for given sizes). A wrong answer gets
"not quite" and a nudge (the question's ``nudge``: what to look at again,
not the answer) and one more try with fresh numbers; after a second miss the
answer is shown with its explanation, and the function unlocks: the point
was to think about it before checking. One run asks at most
``QUESTIONS_BEFORE_FIRST_CHECK`` questions; functions beyond them wait for
the next run. Unlocked functions are remembered in the user's data folder.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from grader.i18n import pick
from grader.practice import answers as quiz_answers
from grader.practice.bank import Question, default_bank
from grader.practice.session import Prompter
from grader.practice.texts import text
from grader.practice.user_data import read_document, write_document

UNLOCKED_FILE = "unlocked.json"
QUESTIONS_PER_UNLOCK = 1
QUESTIONS_BEFORE_FIRST_CHECK = 3
TRIES_PER_QUESTION = 2


@dataclass
class UnlockBudget:
    """What one run may still ask before its first check, and the functions left for later."""

    questions: int = QUESTIONS_BEFORE_FIRST_CHECK
    later: list[str] = field(default_factory=list)


def unlock_questions(function_name: str, rng: np.random.Generator) -> list[Question]:
    """A question about what ``function_name`` returns, drawn from the linked ones (empty if none)."""
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
                         rng: np.random.Generator, budget: UnlockBudget | None = None) -> bool:
    """Ask ``function_name``'s unlock question; True once it is unlocked.

    True at once if it already was, or if the bank has no question for it.
    False if the student stopped answering, or if ``budget`` has no question
    left (the function is then added to ``budget.later``).
    """
    if is_unlocked(function_name):
        return True
    questions = unlock_questions(function_name, rng)
    budget = budget if budget is not None else UnlockBudget()
    if questions and budget.questions <= 0:
        budget.later.append(function_name)
        return False
    for question in questions:
        budget.questions -= 1
        prompter.show(text("unlock_intro", lang, function=function_name))
        if not _ask(question, lang=lang, prompter=prompter, rng=rng):
            return False
    mark_unlocked(function_name)
    prompter.show(text("unlock_done", lang, function=function_name))
    return True


def unlock_before_checks(functions: tuple[str, ...], *, lang: str, prompter: Prompter,
                         rng: np.random.Generator | None = None) -> tuple[str, ...]:
    """Ask the unlock questions of each locked function of ``functions`` (within one run's budget); returns
    the functions now unlocked, in order. UsageError when none is, so no check runs."""
    from grader.content.messages import render
    from grader.errors import UsageError

    rng = rng if rng is not None else np.random.default_rng()
    budget = UnlockBudget()  # at most a few questions before the first check
    opened = tuple(name for name in functions
                   if unlock_interactively(name, lang=lang, prompter=prompter, rng=rng, budget=budget))
    if budget.later:
        prompter.show(text("unlock_later", lang, functions=", ".join(budget.later)))
    if not opened:
        raise UsageError(render("check_none_unlocked", {}, lang))
    return opened


def _ask(question: Question, *, lang: str, prompter: Prompter, rng: np.random.Generator) -> bool:
    """Up to two tries (fresh numbers for the second); False if the student stops."""
    for attempt in range(1, TRIES_PER_QUESTION + 1):
        posed = question.pose(rng)
        prompter.show(pick(posed.prompt, lang))
        if question.code:
            prompter.show(question.code)
        if posed.kind == "ordering":
            for index, step in enumerate(posed.options, start=1):
                prompter.show(f"  {index}. {pick(step, lang)}")
        how = text(f"how.{posed.kind}", lang)
        while True:
            given = prompter.ask(posed, lang, text("answer_prompt", lang, how=how))
            if given is None:
                return False
            verdict = quiz_answers.check(posed, given)
            if verdict.valid:
                break
            prompter.show(text("invalid", lang, how=how))  # unreadable: not a try
        if verdict.correct:
            prompter.show(text("right", lang))
            return True
        if attempt < TRIES_PER_QUESTION:
            nudge = pick(question.nudge, lang) if question.nudge else text("nudge_default", lang)
            prompter.show(text("not_quite_numbers" if question.is_template else "not_quite", lang, nudge=nudge))
        else:
            prompter.show(text("wrong", lang, expected=quiz_answers.expected_text(posed, lang)))
            prompter.show(text("why", lang, explanation=pick(posed.explanation, lang)))
    return True
