"""Leitner boxes, due dates, stats and the progress file in the data folder."""

from __future__ import annotations

import json

import pytest

from grader.errors import ConfigError
from grader.practice.review import DAY, Card, Progress, load_progress, save_progress
from grader.practice.user_data import DATA_DIR_VARIABLE, data_dir


@pytest.fixture(autouse=True)
def private_data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv(DATA_DIR_VARIABLE, str(tmp_path / "data"))
    return tmp_path / "data"


def test_data_dir_follows_the_environment(private_data_dir):
    assert data_dir() == private_data_dir


def test_data_dir_defaults_to_the_platform_folder(monkeypatch):
    monkeypatch.delenv(DATA_DIR_VARIABLE)
    assert "mha-lab" in str(data_dir())


def test_right_answers_climb_and_a_wrong_one_drops_to_box_one():
    progress = Progress()
    for day in range(4):
        card = progress.record(question="q", topic="t", correct=True, now=day * DAY)
    assert card.box == 5 and card.answers == 4 and card.correct == 4
    assert progress.record(question="q", topic="t", correct=True, now=5 * DAY).box == 5  # top box stays
    card = progress.record(question="q", topic="t", correct=False, now=6 * DAY)
    assert (card.box, card.answers, card.correct, card.last_correct) == (1, 6, 5, False)


def test_due_cards_lowest_box_first_then_oldest():
    progress = Progress()
    progress.record(question="missed-early", topic="t", correct=False, now=0.0)
    progress.record(question="missed-late", topic="t", correct=False, now=10.0)
    progress.record(question="known", topic="t", correct=True, now=0.0)  # box 2: due after a day
    assert [card.question for card in progress.due(now=20.0)] == ["missed-early", "missed-late"]
    later = [card.question for card in progress.due(now=DAY + 1)]
    assert later == ["missed-early", "missed-late", "known"]
    assert [card.question for card in progress.due(now=DAY + 1, known={"known"})] == ["known"]


def test_box_intervals_grow():
    card = Card("q", "t")
    dues = []
    for _ in range(5):
        card = card.after(correct=True, now=0.0)
        dues.append(card.due_at)
    assert dues == sorted(dues) and dues[0] > 0 and dues[-1] == 16 * DAY


def test_stats_count_boxes_topics_and_sessions():
    progress = Progress()
    progress.record(question="a", topic="softmax", correct=True, now=0.0)
    progress.record(question="b", topic="softmax", correct=False, now=0.0)
    progress.record(question="c", topic="masks", correct=True, now=0.0)
    progress.finish_session(asked=3, correct=2, seconds=30.0, now=0.0)
    stats = progress.stats(now=1.0)
    assert (stats.questions_seen, stats.answers, stats.correct, stats.due_now) == (3, 3, 2, 1)
    assert stats.boxes == (1, 2, 0, 0, 0) and stats.sessions == 1
    assert stats.accuracy == pytest.approx(2 / 3)
    assert [(t.topic, t.answers, t.correct) for t in stats.topics] == [("masks", 1, 1), ("softmax", 2, 1)]
    assert stats.to_dict()["accuracy"] == pytest.approx(0.6667)


def test_progress_round_trips_through_the_data_folder(private_data_dir):
    progress = load_progress()
    assert progress.cards == {}
    progress.record(question="a", topic="softmax", correct=False, now=5.0)
    progress.finish_session(asked=1, correct=0, seconds=3.0, now=6.0)
    save_progress(progress)
    again = load_progress()
    assert again.cards == progress.cards and again.sessions == progress.sessions
    stored = json.loads((private_data_dir / "quiz-progress.json").read_text())
    assert stored["schema_version"] == 1
    assert [p.name for p in private_data_dir.iterdir()] == ["quiz-progress.json"]  # no temporary left


def test_a_damaged_progress_file_is_reported_with_its_path(private_data_dir):
    private_data_dir.mkdir(parents=True)
    (private_data_dir / "quiz-progress.json").write_text("{not json")
    with pytest.raises(ConfigError, match="quiz-progress.json"):
        load_progress()
