"""Unlocking a function by answering what it must return."""

from __future__ import annotations

import numpy as np
import pytest

from grader.practice import answers as quiz_answers
from grader.practice.prompts import PlainPrompter
from grader.practice.schema import UNLOCKABLE
from grader.practice.unlocking import (
    is_unlocked,
    mark_unlocked,
    unlock_interactively,
    unlock_questions,
    unlocked_functions,
)


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
def test_every_function_has_one_or_two_questions_about_it(function):
    questions = unlock_questions(function, np.random.default_rng(0))
    assert 1 <= len(questions) <= 2 and all(function in q.unlocks for q in questions)


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


def test_a_wrong_answer_explains_and_asks_again_with_fresh_numbers():
    prompter = Answering(wrong_first=1)
    assert unlock_interactively("split_heads", lang="en", prompter=prompter, rng=np.random.default_rng(2))
    first, second = prompter.asked[:2]
    assert first.id == second.id == "split-heads-shape" and first.values != second.values
    assert any(line.startswith("Why:") for line in prompter.shown)


def test_stopping_leaves_the_function_locked():
    prompter = Answering(wrong_first=5, stop_after=2)
    assert not unlock_interactively("forward", lang="en", prompter=prompter, rng=np.random.default_rng(0))
    assert not is_unlocked("forward")
