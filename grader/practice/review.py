"""Spaced review of quiz questions with Leitner boxes, and the progress behind ``--stats``.

Every answered question has a card in one of five boxes. A right answer moves
it up one box, a wrong one back to box 1. A card is due again once its box's
interval has passed since it was last seen: box 1 at once, then 1, 3, 7 and
16 days. ``mha quiz --review`` asks the due cards, lowest box first.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

from grader.practice.user_data import read_document, write_document

PROGRESS_FILE = "quiz-progress.json"
BOX_INTERVAL_DAYS = (0, 1, 3, 7, 16)  # box 1..5
DAY = 86400.0
_KEPT_SESSIONS = 200


@dataclass(frozen=True)
class Card:
    """What the user has shown on one question."""

    question: str
    topic: str
    box: int = 1
    answers: int = 0
    correct: int = 0
    last_seen: float = 0.0
    last_correct: bool = False

    @property
    def due_at(self) -> float:
        return self.last_seen + BOX_INTERVAL_DAYS[self.box - 1] * DAY

    def after(self, *, correct: bool, now: float) -> Card:
        box = min(self.box + 1, len(BOX_INTERVAL_DAYS)) if correct else 1
        return Card(self.question, self.topic, box, self.answers + 1, self.correct + int(correct),
                    now, correct)


@dataclass(frozen=True)
class TopicStats:
    topic: str
    questions: int
    answers: int
    correct: int


@dataclass(frozen=True)
class Stats:
    """Progress at a glance: what ``mha quiz --stats`` prints."""

    questions_seen: int
    answers: int
    correct: int
    due_now: int
    boxes: tuple[int, ...]  # cards per box, box 1 first
    sessions: int
    topics: tuple[TopicStats, ...]

    @property
    def accuracy(self) -> float:
        return self.correct / self.answers if self.answers else 0.0

    def to_dict(self) -> dict:
        data = asdict(self)
        data["accuracy"] = round(self.accuracy, 4)
        return data


@dataclass
class Progress:
    """Cards by question id and a short log of finished sessions."""

    cards: dict[str, Card] = field(default_factory=dict)
    sessions: list[dict] = field(default_factory=list)

    def record(self, *, question: str, topic: str, correct: bool, now: float | None = None) -> Card:
        now = time.time() if now is None else now
        card = self.cards.get(question, Card(question, topic)).after(correct=correct, now=now)
        self.cards[question] = card
        return card

    def finish_session(self, *, asked: int, correct: int, seconds: float, now: float | None = None) -> None:
        entry = {"finished": time.time() if now is None else now, "asked": asked,
                 "correct": correct, "seconds": round(seconds, 1)}
        self.sessions = (self.sessions + [entry])[-_KEPT_SESSIONS:]

    def due(self, *, now: float | None = None, known: Iterable[str] | None = None) -> list[Card]:
        """Cards due for review, lowest box first, then longest unseen.

        ``known`` limits them to questions still in the bank.
        """
        now = time.time() if now is None else now
        allowed = set(known) if known is not None else None
        due = [card for card in self.cards.values()
               if card.due_at <= now and (allowed is None or card.question in allowed)]
        return sorted(due, key=lambda card: (card.box, card.last_seen, card.question))

    def stats(self, *, now: float | None = None) -> Stats:
        topics: dict[str, list[Card]] = {}
        for card in self.cards.values():
            topics.setdefault(card.topic, []).append(card)
        return Stats(
            questions_seen=len(self.cards),
            answers=sum(card.answers for card in self.cards.values()),
            correct=sum(card.correct for card in self.cards.values()),
            due_now=len(self.due(now=now)),
            boxes=tuple(sum(card.box == box for card in self.cards.values())
                        for box in range(1, len(BOX_INTERVAL_DAYS) + 1)),
            sessions=len(self.sessions),
            topics=tuple(TopicStats(topic, len(cards), sum(c.answers for c in cards),
                                    sum(c.correct for c in cards))
                         for topic, cards in sorted(topics.items())),
        )


def load_progress() -> Progress:
    """The user's progress from the data folder (empty on first use)."""
    data = read_document(PROGRESS_FILE, {"cards": [], "sessions": []})
    cards = {}
    for raw in data.get("cards", []):
        card = Card(**{key: raw[key] for key in Card.__dataclass_fields__ if key in raw})
        cards[card.question] = card
    return Progress(cards=cards, sessions=list(data.get("sessions", [])))


def save_progress(progress: Progress) -> None:
    cards = [asdict(card) for card in sorted(progress.cards.values(), key=lambda c: c.question)]
    write_document(PROGRESS_FILE, {"cards": cards, "sessions": progress.sessions})
