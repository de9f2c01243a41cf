"""Numeric templates drill recall, not a calculator: most stems do not hand over the formula they ask for.

A stem that states ``c * tanh(s / c)`` and then asks for ``c * tanh(s / c)`` at two numbers tests
arithmetic. Where the formula is the thing to know (RoPE's angle, the sinusoidal encoding, ALiBi's slopes,
soft-capping), the stem names the method and its convention (the pair layout, numbering from 0) and keeps
the formula for the explanation; a nudge gives the idea on a second try. Estimates that are conventions
rather than knowledge (6N + 12LHd_kT, NTK's exponent) may keep theirs.
"""

from __future__ import annotations

import re

import pytest

from grader.practice.bank import default_bank

# A formula written out: a call of a function of the answer's kind, a power with a bracketed exponent, a
# product or quotient of names ("c * tanh(s / c)", "base^(-2j/d_k)", "m * w", "N = 12 * L * D^2").
FORMULA = re.compile(r"\b(tanh|sin|cos|exp|log|sqrt|softmax)\s*\(|\^\s*\(|\*\*|[\w)] [*/×÷] [\w(]")  # spaced: not key/value
# The templates the content audit found stating their formula, and the half of them that now withhold it.
AUDITED = {"logits-soft-cap-value", "rope-angle", "rope-ntk-base", "positions-alibi-bias",
           "positions-sinusoidal-value", "sizing-flops-per-token", "complexity-crossover", "linear-attention-state"}
WITHHELD = {"logits-soft-cap-value", "rope-angle", "positions-alibi-bias", "positions-sinusoidal-value"}


def numeric_templates():
    return [question for question in default_bank().questions if question.is_template and question.kind == "numeric"]


def states_formula(text: str) -> bool:
    return bool(FORMULA.search(text))


def test_the_detector_sees_the_formulas_the_audit_saw_and_not_plain_numbers():
    assert states_formula("Soft-capping replaces a score s by c * tanh(s / c). With c = 30, ...")
    assert states_formula("pair j is rotated by m * base^(-2j/d_k) radians")
    assert states_formula("PE(pos, 2i) = sin(pos / 10000^(2i/D))")
    assert states_formula("N = 12 * L * D^2 + 50,257 * D")
    assert not states_formula("RoPE with head width d_k = 64 and base 10000, in the RoFormer layout (pair j is "
                              "features 2j and 2j+1, j from 0): by how many radians is pair j = 8 rotated?")
    assert not states_formula("What does head 2 add for a key at distance i - j = 10 before the query?")


@pytest.mark.parametrize("question_id", sorted(WITHHELD))
def test_a_template_that_drills_recall_does_not_state_its_formula_in_either_language(question_id):
    question = next(question for question in numeric_templates() if question.id == question_id)
    for lang in ("en", "zh"):
        assert not states_formula(question.prompt[lang]), (question_id, lang, question.prompt[lang])
        assert question.nudge.get(lang), f"{question_id}: a withheld formula needs a nudge for the second try"
    formula_words = {"en": ("tanh", "10000^", "2^(-8", "base^"), "zh": ("tanh", "10000^", "2^(-8", "base^")}
    for lang, words in formula_words.items():
        assert not any(word in question.prompt[lang] for word in words), question.prompt[lang]


def test_at_most_half_of_the_audited_stems_and_a_third_of_all_state_their_formula():
    templates = {question.id: question for question in numeric_templates()}
    assert AUDITED <= set(templates), AUDITED - set(templates)
    stating = {question_id for question_id, question in templates.items() if states_formula(question.prompt["en"])}
    assert len(stating & AUDITED) <= len(AUDITED) // 2, sorted(stating & AUDITED)
    assert len(stating) <= len(templates) // 3, f"{len(stating)} of {len(templates)} stems state a formula: {sorted(stating)}"


def test_a_stem_states_a_formula_in_both_languages_or_in_neither():
    for question in numeric_templates():
        assert states_formula(question.prompt["en"]) == states_formula(question.prompt["zh"]), question.id
