"""The question bank: coverage, validation of content files, posing, answer reading."""

from __future__ import annotations

import collections
import textwrap

import numpy as np
import pytest

from grader.content.catalog import misconception_ids
from grader.errors import ContentError
from grader.practice import answers as quiz_answers
from grader.practice import formulas as quiz_formulas
from grader.practice.bank import (KINDS, LEVELS, QUESTIONS_DIR, UNLOCKABLE, default_bank, load_bank,
                                  questions_for_misconception)

REQUIRED_TOPICS = {
    "qkv-roles", "dot-product-attention", "scaling", "softmax", "heads", "split-combine",
    "parameters", "complexity", "self-cross", "masks", "positions", "heatmaps", "kv-cache",
    "grouped-query", "memory-efficient", "bugs", "attention-math", "rotary", "model-sizing",
    "decoding", "long-context", "serving", "transformer-block", "logit-control", "parallelism",
    "attention-variants", "sampling", "biases",
    "linear-attention",
    "paged-cache",
    "normalisation",
}


def test_bank_size_and_coverage():
    bank = default_bank()
    assert len(bank.questions) >= 180
    assert len(bank.titles) >= 24
    assert set(bank.titles) == REQUIRED_TOPICS
    assert {path.stem for path in QUESTIONS_DIR.glob("*.toml")} == REQUIRED_TOPICS
    assert set(collections.Counter(q.kind for q in bank.questions)) == set(KINDS)
    assert set(collections.Counter(q.level for q in bank.questions)) == set(LEVELS)
    assert sum(q.is_template for q in bank.questions) >= 20
    assert all(len([q for q in bank.questions if q.topic == topic]) >= 5 for topic in REQUIRED_TOPICS)


def test_every_question_and_title_is_bilingual():
    bank = default_bank()
    for question in bank.questions:
        assert question.languages == ("en", "zh"), question.id
        assert question.explanation["zh"] != question.explanation["en"], question.id
    for title in bank.titles.values():
        assert title["en"] and title["zh"]


def test_every_catalog_misconception_has_a_question():
    for misconception in misconception_ids():
        linked = questions_for_misconception(misconception)
        assert linked, misconception
        assert all(misconception in question.misconceptions for question in linked)
        levels = [LEVELS.index(question.level) for question in linked]
        assert levels == sorted(levels)


def test_questions_for_unknown_misconception_is_empty():
    assert questions_for_misconception("no-such-mistake") == []


def test_no_scale_links_to_the_sqrt_question():
    assert "scaling-why-sqrt" in [q.id for q in questions_for_misconception("attention-no-scale")]


def test_every_graded_function_can_be_unlocked():
    unlocking = {name for question in default_bank().questions for name in question.unlocks}
    assert unlocking == UNLOCKABLE


@pytest.mark.parametrize("question", default_bank().questions, ids=lambda question: question.id)
def test_expected_answer_as_typed_is_accepted(question):
    for seed in range(3):
        posed = question.pose(np.random.default_rng(seed))
        for lang in ("en", "zh"):
            typed = quiz_answers.expected_text(posed, lang)
            assert quiz_answers.check(posed, typed).correct, (typed, posed.expected)
        assert "{" not in posed.prompt["en"] or question.code, "a placeholder was left unfilled"


def test_templates_draw_fresh_numbers_and_repeat_for_a_seed():
    question = default_bank().get("split-heads-shape")
    first = question.pose(np.random.default_rng(7))
    again = question.pose(np.random.default_rng(7))
    drawn = {question.pose(np.random.default_rng(seed)).expected for seed in range(20)}
    assert first.expected == again.expected and first.prompt == again.prompt
    assert len(drawn) > 5


def test_choices_are_shuffled_but_the_answer_follows():
    question = default_bank().get("scaling-why-sqrt")
    right = next(choice.text for choice in question.choices if choice.correct)
    positions = set()
    for seed in range(12):
        posed = question.pose(np.random.default_rng(seed))
        assert posed.options[posed.expected] == right
        positions.add(posed.expected)
    assert len(positions) > 1


def test_ordering_is_never_shown_in_order():
    question = default_bank().get("attention-order-of-steps")
    for seed in range(20):
        posed = question.pose(np.random.default_rng(seed))
        assert posed.expected != tuple(range(len(posed.options)))
        assert [posed.options[i] for i in posed.expected] == list(question.steps)


@pytest.mark.parametrize("typed", [
    "(2, 8, 10, 64)", "2,8,10,64", "[2 8 10 64]", "2x8x10x64", "2 × 8 × 10 × 64",
    "（2，8，10，64）", "torch.Size([2, 8, 10, 64])", " (2,8,10,64,) ",
])
def test_shapes_are_read_leniently(typed):
    assert quiz_answers.parse_shape(typed) == (2, 8, 10, 64)


@pytest.mark.parametrize("typed", ["", "(B, H, T, d_k)", "(2, 8, -1)", "(2.5, 3)", "two by three"])
def test_non_shapes_are_refused(typed):
    assert quiz_answers.parse_shape(typed) is None


@pytest.mark.parametrize("typed,value", [
    ("1,048,576", 1048576), ("1_048_576", 1048576), ("1.05e6", 1.05e6), ("2.4M", 2.4e6),
    ("12 k", 12000), ("８", 8), ("-0.5", -0.5), (".25", 0.25), ("1 048 576", 1048576),
    ("1/4", 0.25), ("3 / 8", 0.375), ("１／４", 0.25), ("42.5%", 42.5), ("42.5 ％", 42.5), ("１２％", 12),
])
def test_numbers_are_read_leniently(typed, value):
    assert quiz_answers.parse_number(typed) == pytest.approx(value)


@pytest.mark.parametrize("typed", ["", "abc", "1.2.3", "1e", "M", "3 1 2 4", "12 34", "1/0", "1/2/3", "%", "4%2"])
def test_non_numbers_are_refused(typed):
    assert quiz_answers.parse_number(typed) is None


def test_letters_orders_and_truth_values():
    assert quiz_answers.parse_letters("b", 4) == [1]
    assert quiz_answers.parse_letters("A, c", 4) == [0, 2]
    assert quiz_answers.parse_letters("ac", 4) == [0, 2]
    assert quiz_answers.parse_letters("Ｂ", 4) == [1]
    assert quiz_answers.parse_letters("e", 4) is None
    assert quiz_answers.parse_order("3 1 2", 3) == [2, 0, 1]
    assert quiz_answers.parse_order("312", 3) == [2, 0, 1]
    assert quiz_answers.parse_order("3 1 1", 3) is None
    assert quiz_answers.parse_truth("对") is True and quiz_answers.parse_truth("False.") is False
    assert quiz_answers.parse_truth("maybe") is None


def test_numeric_tolerance_comes_from_the_question():
    question = default_bank().get("scaling-factor-value")
    posed = question.pose(np.random.default_rng(0), values={"d_model": 512, "num_heads": 8})
    assert posed.expected == pytest.approx(8.0)
    assert quiz_answers.check(posed, "8.03").correct
    assert not quiz_answers.check(posed, "8.2").correct
    exact = default_bank().get("parameters-no-bias").pose(
        np.random.default_rng(0), values={"d_model": 64, "num_heads": 4})
    assert quiz_answers.check(exact, "16,384").correct
    assert not quiz_answers.check(exact, "16385").correct


def test_single_choice_with_two_letters_is_invalid_not_wrong():
    posed = default_bank().get("scaling-why-sqrt").pose(np.random.default_rng(0))
    verdict = quiz_answers.check(posed, "A, B")
    assert not verdict.valid and not verdict.correct


GOOD_QUESTION = """
[[questions]]
id = "demo-question"
level = "basic"
type = "true-false"
prompt.en = "A statement."
prompt.zh = "一个陈述。"
explanation.en = "Why."
explanation.zh = "原因。"
answer = true
"""


def write_topic(folder, body, *, topic="demo", header=None):
    header = header or f'schema_version = 1\ntopic = "{topic}"\ntitle.en = "Demo"\ntitle.zh = "示例"\n'
    (folder / f"{topic}.toml").write_text(header + textwrap.dedent(body), encoding="utf-8")
    return folder


def test_a_minimal_file_loads(tmp_path):
    bank = load_bank(write_topic(tmp_path, GOOD_QUESTION))
    assert [q.id for q in bank.questions] == ["demo-question"]


@pytest.mark.parametrize("change,expected", [
    (lambda text: text.replace('prompt.zh = "一个陈述。"\n', ""), "prompt'.zh is missing"),
    (lambda text: text + 'colour = "red"\n', "unknown key 'colour'"),
    (lambda text: text + 'misconceptions = ["softmax-unstabel"]\n', "'softmax-unstabel'"),
    (lambda text: text.replace('level = "basic"', 'level = "easy"'), "'level' is 'easy'"),
    (lambda text: text.replace("answer = true", "answer = 3"), "'answer' does not fit"),
    (lambda text: text.replace("answer = true", 'answer = "d_model > 2"'), "only in a template"),
    (lambda text: text + "variables.d_model = [8]\nrequire = \"__import__('os')\"\n", "may be called"),
    (lambda text: text + "variables.d_model = [8]\nderived.d_k = \"d_model // heads\"\n",
     "undefined ['heads']"),
    (lambda text: text + "variables.d_model = [8]\nrequire = \"d_model > 100\"\n", "never met"),
    (lambda text: text + text, "also used"),
])
def test_content_errors_name_the_file_and_key(tmp_path, change, expected):
    write_topic(tmp_path, change(GOOD_QUESTION))
    with pytest.raises(ContentError) as caught:
        load_bank(tmp_path)
    assert "demo.toml" in str(caught.value) and expected in str(caught.value)


def test_file_level_errors(tmp_path):
    write_topic(tmp_path, GOOD_QUESTION, header='schema_version = 2\ntopic = "demo"\n')
    with pytest.raises(ContentError, match="schema_version"):
        load_bank(tmp_path)
    write_topic(tmp_path, GOOD_QUESTION, header='schema_version = 1\ntopic = "other"\n')
    with pytest.raises(ContentError, match="'topic' must equal"):
        load_bank(tmp_path)
    (tmp_path / "demo.toml").write_text("schema_version = [", encoding="utf-8")
    with pytest.raises(ContentError, match="not valid TOML"):
        load_bank(tmp_path)


def test_choice_questions_need_the_right_number_of_correct_choices(tmp_path):
    body = GOOD_QUESTION.replace('type = "true-false"', 'type = "single-choice"').replace(
        "answer = true\n", "") + textwrap.dedent("""
        [[questions.choices]]
        en = "one"
        zh = "一"
        correct = true
        [[questions.choices]]
        en = "two"
        zh = "二"
        correct = true
        """)
    write_topic(tmp_path, body)
    with pytest.raises(ContentError, match="2 correct choices"):
        load_bank(tmp_path)


@pytest.mark.parametrize("expression", [
    "__import__('os').system('true')", "d_model.real", "[d_model]", "open('x')", "2 ** 1000",
    "lambda: 1",
])
def test_formulas_refuse_anything_but_arithmetic(expression):
    with pytest.raises(quiz_formulas.FormulaError):
        quiz_formulas.evaluate(expression, {"d_model": 8})


def test_formulas_compute():
    values = {"d_model": 512, "num_heads": 8}
    assert quiz_formulas.evaluate("(2, num_heads, 10, d_model // num_heads)", values) == (2, 8, 10, 64)
    assert quiz_formulas.evaluate("sqrt(d_model // num_heads)", values) == 8.0
    assert quiz_formulas.evaluate("d_model % num_heads == 0 and not num_heads > 8", values) is True
    assert quiz_formulas.names("max(a, b) * c") == {"a", "b", "c"}
    assert quiz_formulas.evaluate("50 * tanh(100 / 50)", {}) == pytest.approx(48.201379)
    assert quiz_formulas.evaluate("cos(0) + sin(0) + log(exp(2))", {}) == pytest.approx(3.0)


def test_quiz_texts_are_bilingual_with_the_same_placeholders(tmp_path):
    from grader.practice.texts import clock, load_texts, text

    texts = load_texts()
    assert all(set(value) == {"en", "zh"} for value in texts.values())
    assert set(KINDS) <= {key.removeprefix("how.") for key in texts if key.startswith("how.")}
    assert text("wrong", "zh", expected="B") == "不对。正确答案是 B。"
    assert (clock(75.4), clock(3723)) == ("1:15", "1:02:03")
    broken = tmp_path / "quiz.toml"
    broken.write_text('schema_version = 1\n[text.right]\nen = "Right {name}."\nzh = "正确。"\n', encoding="utf-8")
    with pytest.raises(ContentError, match="text.right has different placeholders"):
        load_texts(broken)



def option_lengths(lang: str) -> list[tuple[str, int, list[int]]]:
    """Per single-choice question: its id, the right option's length and the others' lengths."""
    found = []
    for question in default_bank().questions:
        if question.kind == "single-choice":
            right = next(len(choice.text[lang]) for choice in question.choices if choice.correct)
            others = [len(choice.text[lang]) for choice in question.choices if not choice.correct]
            found.append((question.id, right, others))
    return found


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_option_length_does_not_give_the_answer_away(lang):
    lengths = option_lengths(lang)
    longest = [qid for qid, right, others in lengths if right > max(others)]
    shortest = [qid for qid, right, others in lengths if right < min(others)]
    assert len(lengths) >= 60
    assert len(longest) <= len(lengths) / 3, sorted(longest)
    assert len(shortest) <= len(lengths) / 3, sorted(shortest)
    # nor does "pick the second longest" work: no rank by length holds most answers
    ranks = collections.Counter(sum(other > right for other in others) for _, right, others in lengths)
    assert max(ranks.values()) <= len(lengths) / 2, ranks


def test_a_missing_mask_offset_is_drilled_by_a_question_it_gets_wrong():
    for misconception in ("mask-causal-no-offset", "kv-cache-mask-no-offset"):
        assert questions_for_misconception(misconception)[0].id == "decoding-new-token-last-key"
    question = default_bank().get("decoding-new-token-last-key")
    for values in question.instances():
        without_offset = values["index"]  # np.tril(np.ones((T, T))) for the new tokens alone
        assert question.answer_for(values) != without_offset


def test_the_linked_question_index_agrees_with_the_bank_and_follows_its_files(tmp_path, monkeypatch):
    """`mha check` names a question per mistake from an index kept in the user's cache: the same questions,
    in the same order, as the validated bank gives; an edited question file rebuilds it."""
    import shutil

    from grader.content.catalog import misconception_ids
    from grader.practice import bank
    from grader.practice import linked as linking

    def fresh_index():
        linking.linked_question_index.cache_clear()
        return linking.linked_question_index()

    monkeypatch.setenv("MHA_CACHE_DIR", str(tmp_path / "cache"))
    try:
        built, kept = fresh_index(), fresh_index()  # the second is read from the cache
        assert list((tmp_path / "cache").glob("linked-questions-*.json"))
        for misconception in misconception_ids():
            wanted = [question.id for question in bank.questions_for_misconception(misconception)]
            assert built.get(misconception, []) == kept.get(misconception, []) == wanted, misconception
        linked = next(m for m in sorted(built) if built[m])
        copied = tmp_path / "questions"
        shutil.copytree(bank.QUESTIONS_DIR, copied)
        for path in copied.glob("*.toml"):  # the link is gone from every question that had it
            path.write_text(path.read_text(encoding="utf-8").replace(f'"{linked}"', '"not-a-link"')
                            .replace(f'misconceptions = ["not-a-link"]', "misconceptions = []")
                            .replace('"not-a-link", ', "").replace(', "not-a-link"', ""), encoding="utf-8")
        monkeypatch.setattr(linking, "QUESTIONS_DIR", copied)
        assert linked not in fresh_index() and linking.linked_question(linked) is None
    finally:
        linking.linked_question_index.cache_clear()


def test_every_explanation_says_more_than_the_arithmetic():
    """An explanation teaches: beyond the formula that gives the answer, a few words of why or of what follows
    (the audit found "B*H*T*S entries of 4 bytes each: {answer} bytes." and nine more like it)."""
    import re

    from grader.practice.bank import default_bank

    def words(text: str) -> int:  # English words of three letters or more, outside the placeholders
        return len(re.findall(r"[A-Za-z]{3,}", re.sub(r"\{[^}]*\}", "", text)))

    def characters(text: str) -> int:  # Chinese characters
        return len(re.findall(r"[\u4e00-\u9fff]", text))

    assert words("B*H*T*S entries of 4 bytes each: {answer} bytes.") < 7  # the measure finds a bare one
    bank = default_bank().questions
    assert [q.id for q in bank if words(q.explanation["en"]) < 7] == []
    assert [q.id for q in bank if characters(q.explanation["zh"]) < 9] == []
