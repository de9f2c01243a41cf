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


# A stem that promises an outcome, and the claims of a distractor it rules out by that promise (G4): with
# "the values returned are right", an option saying the values overflow cannot be the answer.
PROMISES = {
    "values": {
        "en": (r"\b(values? (returned )?(are|is) right|returns? the right values|right values|output is right|"
               r"values are correct)\b",
               r"\b(overflows?|NaN|inf(inity)?|wrong values|values are wrong|wrong axis|sums? to (more|less)|"
               r"does not sum to 1)\b"),
        "zh": (r"返回的值(是)?对的|数值(是)?正确|值是对的|输出(是)?对的",
               r"溢出|NaN|数值不对|值不对|值是错的|轴不对|错误的轴|和不为 ?1"),
    },
    "shape": {
        "en": (r"\b(right shape|shape is right|correct shape|shape is correct)\b",
               r"\b(wrong shape|shape is wrong|gives \(B, d_k|returns \(B, d_k|shape \([^)]*\) instead)"),
        "zh": (r"形状(是)?对的|形状正确|正确的形状|形状 \([^)]*\) 是对的",
               r"形状不对|形状错|形状是错的"),
    },
    "runs": {
        "en": (r"\b(runs without (an )?error|raises no (error|exception))\b",
               r"\b(raises|throws|crashes)\b"),
        "zh": (r"运行时没有报错|不会报错|没有抛出",
               r"抛出|报错|崩溃"),
    },
}


def ruled_out(prompt: str, options: list[str], lang: str) -> list[tuple[str, str]]:
    """The (promise, option) pairs where an option claims what the prompt has already excluded."""
    found = []
    for promise, patterns in PROMISES.items():
        stem, claim = (re.compile(pattern, re.I) for pattern in patterns[lang])
        if stem.search(prompt):
            found.extend((promise, option) for option in options if claim.search(option))
    return found


def test_the_rule_out_check_finds_what_the_audit_found():
    """The stems and distractors the content audit quoted (G4), before they were rewritten."""
    assert ruled_out("The values returned are right. What is the problem?",
                     ["It overwrites the caller's array.", "It overflows for large scores.",
                      "It normalises over the wrong axis."], "en") == [
        ("values", "It overflows for large scores."), ("values", "It normalises over the wrong axis.")]
    assert ruled_out("This split_heads returns the right shape, (B, H, T, d_k). What is wrong?",
                     ["transpose(0, 2, 1, 3) gives (B, d_k, T, H)", "Heads get every H-th feature."], "en") == [
        ("shape", "transpose(0, 2, 1, 3) gives (B, d_k, T, H)")]
    assert ruled_out("返回的值是对的。问题在哪里？", ["大分数时会溢出。", "它覆盖了调用者的数组。"], "zh") == [
        ("values", "大分数时会溢出。")]
    assert ruled_out("What does this return?", ["It overflows."], "en") == []


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_no_stem_rules_out_its_distractors(lang):
    wrong, promising = [], set()
    for question in [*choice_questions("single-choice"), *choice_questions("multiple-choice")]:
        distractors = [choice.text[lang] for choice in question.choices if not choice.correct]
        wrong.extend((question.id, promise, option)
                     for promise, option in ruled_out(question.prompt[lang], distractors, lang))
        if ruled_out(question.prompt[lang], ["overflows NaN wrong shape raises 溢出 形状不对 抛出"], lang):
            promising.add(question.id)
    assert wrong == []
    # the stems that promise an outcome are found in both languages (else the check would hold vacuously)
    assert {"bug-softmax-in-place", "bug-split-heads-interleaved", "split-heads-no-transpose-effect"} <= promising
