"""The bank gives nothing away: a candidate scores only by knowing the answer.

Each test computes one figure over the whole bank and holds it: how often a
fixed true/false statement is true, how often an option of the "Nothing:" kind
is right against chance, how many options of a multiple-choice item are right,
how many options a spot-the-bug item offers, and whether absolute words mark
the distractors. The sheets' neutral numbering is held in tests/test_sheets.py.
"""

from __future__ import annotations

import collections
import re

import pytest

from grader.practice.bank import default_bank

# An option that denies the premise: "Nothing: ...", "It does not: ...", "没有问题：...".
DENIAL = {
    "en": re.compile(r"^(Nothing\b|It does not\b|It cannot\b|It is fine\b|It works\b|No\b|None\b)"),
    "zh": re.compile(r"^(没有(问题|不同|影响|代价)|没问题|什么(都|也)|不可能|做不到|不增长|与 T 无关|它没有避免)"),
}
ABSOLUTE = re.compile(r"\b(only|always|never|exactly|every|cannot|all|any|nothing|none)\b", re.I)


def choice_questions(kind):
    return [question for question in default_bank().questions if question.kind == kind]


def test_fixed_true_false_statements_are_true_about_half_the_time():
    fixed = [q for q in choice_questions("true-false") if not q.is_template]
    true = sum(bool(question.answer) for question in fixed)
    assert len(fixed) >= 30
    assert 0.40 <= true / len(fixed) <= 0.60, f"{true} of {len(fixed)} are true"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_option_that_denies_the_premise_is_right_as_often_as_chance(lang):
    denials = [(question, choice) for question in choice_questions("single-choice")
               for choice in question.choices if DENIAL[lang].match(choice.text[lang])]
    right = sum(choice.correct for _, choice in denials)
    by_chance = sum(1 / len(question.choices) for question, _ in denials)
    assert len(denials) >= 15
    assert 0.6 * by_chance <= right <= 1.5 * by_chance, (right, round(by_chance, 1))


def test_denials_are_the_same_options_in_both_languages():
    for question in choice_questions("single-choice"):
        for choice in question.choices:
            assert bool(DENIAL["en"].match(choice.text["en"])) == bool(DENIAL["zh"].match(choice.text["zh"])), (
                question.id, choice.text)


def test_multiple_choice_items_have_one_two_three_or_all_options_right():
    items = choice_questions("multiple-choice")
    counts = [sum(choice.correct for choice in q.choices) for q in items]
    spread = collections.Counter("all" if right == len(q.choices) else right for q, right in zip(items, counts))
    assert {1, 2, 3, "all"} <= set(spread), spread
    assert max(spread.values()) <= len(items) / 2, spread
    right_share = sum(counts) / sum(len(q.choices) for q in items)
    assert 0.35 <= right_share <= 0.65, right_share


def test_every_spot_the_bug_item_offers_four_options():
    bugs = [q for q in choice_questions("single-choice") if q.topic == "bugs"]
    assert len(bugs) >= 15
    assert [q.id for q in bugs if len(q.choices) < 4] == []
    # and some of the code shown is right: "nothing is wrong" must be a live option
    assert sum(DENIAL["en"].match(c.text["en"]) is not None and c.correct for q in bugs for c in q.choices) >= 3


def test_absolute_words_do_not_mark_the_distractors():
    single = choice_questions("single-choice")
    keys = [c.text["en"] for q in single for c in q.choices if c.correct]
    others = [c.text["en"] for q in single for c in q.choices if not c.correct]
    in_keys = sum(bool(ABSOLUTE.search(text)) for text in keys) / len(keys)
    in_others = sum(bool(ABSOLUTE.search(text)) for text in others) / len(others)
    assert in_keys >= 0.7 * in_others, (round(in_keys, 2), round(in_others, 2))
