"""Given code that is another exercise's answer is left out of a release, statement by statement."""

from __future__ import annotations

import textwrap

from grader.authoring.givens import other_answers, solution_lines, withhold_given_answers

OTHER = textwrap.dedent('''\
    def helper(x):
        ### BEGIN SOLUTION
        centred = x - x.max(axis=-1, keepdims=True)  # the answer
        return centred / centred.sum(axis=-1, keepdims=True)
        ### END SOLUTION
    ''')

STUB = textwrap.dedent('''\
    import numpy as np


    def helper(x):
        """Given: the other exercise's function (given)."""
        centred = x  -  x.max(axis=-1, keepdims=True)
        return centred / centred.sum(axis=-1,   keepdims=True)  # spacing and comments differ


    class Model:
        def __init__(self, size):
            """Builds the model."""
            self.size = size
            if size > 3:
                centred = np.zeros(size) - np.zeros(size).max(axis=-1, keepdims=True)
            self.cache = []

        def own(self, x):
            return x + 1  # nobody's answer: kept
    ''')


def test_solution_lines_are_the_telling_lines_of_solution_blocks():
    assert solution_lines(OTHER) == {"centred = x - x.max(axis=-1, keepdims=True)",
                                     "return centred / centred.sum(axis=-1, keepdims=True)"}


def test_a_given_function_and_one_statement_of_a_constructor_are_withheld():
    answers = solution_lines(OTHER) | {"centred = np.zeros(size) - np.zeros(size).max(axis=-1, keepdims=True)"}
    withheld = withhold_given_answers(STUB, answers=answers)
    assert "keepdims" not in withheld.source
    assert 'raise NotImplementedError("helper: paste your own' in withheld.source
    assert "Withheld from this release" in withheld.source.split("class Model")[1]
    assert "self.cache = []" in withheld.source and "self.size = size" in withheld.source  # the exercise's own
    assert "return x + 1" in withheld.source
    assert withheld.functions == ("helper", "Model.__init__")
    compile(withheld.source, "stub", "exec")


def test_nothing_of_another_answer_leaves_the_stub_unchanged(tmp_path):
    (tmp_path / "mine.py").write_text(OTHER, encoding="utf-8")
    (tmp_path / "other.py").write_text("def f():\n    ### BEGIN SOLUTION\n    return 'unrelated line of code'\n"
                                       "    ### END SOLUTION\n", encoding="utf-8")
    assert other_answers("mine", tmp_path) == {"return 'unrelated line of code'"}
    untouched = withhold_given_answers(STUB, answers=other_answers("mine", tmp_path))
    assert untouched.source == STUB and untouched.functions == ()
