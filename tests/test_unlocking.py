"""Unlocking a function by answering what it must return."""

from __future__ import annotations

import numpy as np
import pytest

from grader.practice import answers as quiz_answers
from grader.practice.bank import default_bank
from grader.practice.prompts import PlainPrompter
from grader.practice.schema import UNLOCKABLE
from grader.practice.unlocking import (QUESTIONS_BEFORE_FIRST_CHECK, UnlockBudget, is_unlocked, mark_unlocked,
                                       unlock_before_checks, unlock_interactively, unlock_questions, unlocked_functions)


@pytest.fixture(autouse=True)
def private_data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("MHA_DATA_DIR", str(tmp_path / "data"))


class Answering(PlainPrompter):
    """Answers wrongly ``wrong_first`` times, then rightly."""

    def __init__(self, wrong_first=0, stop_after=None):
        self.shown, self.asked, self.wrong_first, self.stop_after = [], [], wrong_first, stop_after
        super().__init__(read=lambda message: "", write=self.shown.append)

    def ask(self, posed, lang, message):
        self.asked.append(posed)
        if self.stop_after is not None and len(self.asked) > self.stop_after:
            return None
        if len(self.asked) <= self.wrong_first:
            return "(1, 1)" if posed.kind == "shape" else "nonsense"
        return quiz_answers.expected_text(posed, lang)


@pytest.mark.parametrize("function", sorted(UNLOCKABLE))
def test_every_function_has_one_question_about_it_with_a_nudge(function):
    questions = unlock_questions(function, np.random.default_rng(0))
    assert len(questions) == 1 and function in questions[0].unlocks
    linked = [q for q in default_bank().questions if function in q.unlocks]
    assert all(set(q.nudge) == {"en", "zh"} for q in linked)


def test_unknown_function_has_no_questions():
    assert unlock_questions("backward", np.random.default_rng(0)) == []


def test_state_is_remembered():
    assert unlocked_functions() == set()
    mark_unlocked("softmax")
    mark_unlocked("forward")
    assert is_unlocked("softmax") and not is_unlocked("split_heads")
    assert unlocked_functions() == {"softmax", "forward"}


def test_right_answers_unlock():
    prompter = Answering()
    assert unlock_interactively("split_heads", lang="en", prompter=prompter, rng=np.random.default_rng(1))
    assert is_unlocked("split_heads")
    assert any("split_heads is unlocked" in line for line in prompter.shown)
    again = Answering()
    assert unlock_interactively("split_heads", lang="en", prompter=again, rng=np.random.default_rng(1))
    assert again.asked == []  # already unlocked: nothing asked


def test_a_wrong_answer_gets_not_quite_and_a_nudge_then_fresh_numbers():
    prompter = Answering(wrong_first=1)
    assert unlock_interactively("split_heads", lang="en", prompter=prompter, rng=np.random.default_rng(2))
    first, second = prompter.asked
    assert first.id == second.id == "split-heads-shape" and first.values != second.values
    nudge = default_bank().get("split-heads-shape").nudge["en"]
    assert any(line.startswith("Not quite.") and nudge in line for line in prompter.shown)
    assert not any(line.startswith("Why:") for line in prompter.shown)  # the nudge does not give the answer
    expected = quiz_answers.expected_text(first, "en")
    assert not any(expected in line for line in prompter.shown[: prompter.shown.index(next(
        line for line in prompter.shown if line.startswith("Not quite.")))])


def test_a_second_miss_shows_the_answer_and_unlocks():
    prompter = Answering(wrong_first=2)
    assert unlock_interactively("combine_heads", lang="en", prompter=prompter, rng=np.random.default_rng(3))
    assert len(prompter.asked) == 2 and is_unlocked("combine_heads")
    second = prompter.asked[1]
    assert any(quiz_answers.expected_text(second, "en") in line for line in prompter.shown)
    assert any(line.startswith("Why:") for line in prompter.shown)


def test_at_most_three_questions_come_before_the_first_check():
    budget, prompter = UnlockBudget(), Answering()
    functions = sorted(UNLOCKABLE)
    opened = [name for name in functions
              if unlock_interactively(name, lang="en", prompter=prompter, rng=np.random.default_rng(4), budget=budget)]
    assert len(prompter.asked) == QUESTIONS_BEFORE_FIRST_CHECK == 3
    assert opened == functions[:3] and budget.later == functions[3:]
    assert not any(is_unlocked(name) for name in budget.later)


def test_stopping_leaves_the_function_locked():
    prompter = Answering(wrong_first=5, stop_after=1)  # stops at the second try
    assert not unlock_interactively("forward", lang="en", prompter=prompter, rng=np.random.default_rng(0))
    assert not is_unlocked("forward")


def test_before_the_checks_at_most_the_budget_is_asked_the_rest_waits_and_none_unlocked_is_a_usage_error():
    from grader.errors import UsageError

    prompter = Answering()
    functions = tuple(sorted(UNLOCKABLE))[:QUESTIONS_BEFORE_FIRST_CHECK + 1]
    opened = unlock_before_checks(functions, lang="en", prompter=prompter, rng=np.random.default_rng(2))
    assert opened == functions[:QUESTIONS_BEFORE_FIRST_CHECK] and not is_unlocked(functions[-1])
    assert any(functions[-1] in line for line in prompter.shown[-1:])  # "answer for ... next time"
    with pytest.raises(UsageError):
        unlock_before_checks(functions[-1:], lang="en", prompter=Answering(stop_after=0), rng=np.random.default_rng(3))


def test_piped_input_gets_typed_prompts_that_repeat_the_answers_and_json_keeps_them_on_stderr(capsys, monkeypatch):
    import io

    from grader.practice.prompts import make_prompter

    monkeypatch.setattr("sys.stdin", io.StringIO("(1, 2)\n"))
    prompter = make_prompter(stderr=True)
    assert isinstance(prompter, PlainPrompter)
    prompter.show("a question")
    assert prompter._read("your answer: ") == "(1, 2)"
    captured = capsys.readouterr()
    assert captured.out == "" and "a question" in captured.err and "your answer: " in captured.err
    assert make_prompter(plain=True)._echo  # piped answers are repeated, so a transcript reads well
