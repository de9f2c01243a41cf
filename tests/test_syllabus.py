"""The interview syllabus (grader/content/syllabus.toml) and the bank agree.

Every topic of the syllabus is asked by at least one question in both
languages, numeric topics by a computed (numeric) question; every listed
misconception is the tempting distractor of a question and is corrected in
the tutorial's recap in both languages.
"""

from __future__ import annotations

import tomllib

import pytest

from grader.authoring.tutorial import load_tutorial
from grader.paths import CONTENT_DIR
from grader.practice.bank import default_bank

SYLLABUS = tomllib.loads((CONTENT_DIR / "syllabus.toml").read_text(encoding="utf-8"))
TUTORIAL = {lang: load_tutorial().texts[lang] for lang in ("en", "zh")}


def test_the_syllabus_numbers_every_topic_once_in_its_sections():
    numbers = [topic["number"] for topic in SYLLABUS["topic"]]
    assert numbers == list(range(1, len(numbers) + 1))  # numbered in order, none skipped
    assert len(numbers) >= 80
    sections = [section["id"] for section in SYLLABUS["section"]]
    assert sections == list("ABCDEFGHI")
    assert {topic["section"] for topic in SYLLABUS["topic"]} == set(sections)
    for entry in SYLLABUS["section"] + SYLLABUS["topic"]:
        assert entry["title"]["en"].strip() and entry["title"]["zh"].strip()


@pytest.mark.parametrize("topic", SYLLABUS["topic"], ids=lambda topic: str(topic["number"]))
def test_every_topic_is_asked_in_both_languages(topic):
    bank = default_bank()
    assert topic["questions"], topic["number"]
    for question_id in topic["questions"]:
        question = bank.get(question_id)  # KeyError names a missing question
        assert question.languages == ("en", "zh")
    if topic.get("numeric"):
        kinds = {bank.get(question_id).kind for question_id in topic["questions"]}
        assert "numeric" in kinds, f"topic {topic['number']} needs a computed answer"


def test_supporting_questions_exist_and_are_not_counted_as_asking_the_topic():
    bank = default_bank()
    for topic in SYLLABUS["topic"]:
        supporting = topic.get("supporting", [])
        assert not set(supporting) & set(topic["questions"]), topic["number"]
        for question_id in supporting:
            bank.get(question_id)


def test_most_of_the_bank_is_placed_in_the_syllabus():
    placed = {question_id for topic in SYLLABUS["topic"]
              for question_id in topic["questions"] + topic.get("supporting", [])}
    bank = {question.id for question in default_bank().questions}
    assert len(placed) >= 0.75 * len(bank)


@pytest.mark.parametrize("entry", SYLLABUS["misconception"], ids=lambda entry: entry["id"])
def test_each_misconception_is_a_tempting_distractor(entry):
    question = default_bank().get(entry["question"])
    assert question.kind in ("single-choice", "multiple-choice")
    wrong = [choice.text["en"] for choice in question.choices if not choice.correct]
    assert entry["distractor"] in wrong, (entry["id"], wrong)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_tutorial_recap_corrects_each_misconception(lang):
    recap = TUTORIAL[lang]["text"]["misconceptions"]
    for entry in SYLLABUS["misconception"]:
        assert entry["claim"][lang] in recap, (lang, entry["id"])
