"""The question bank: loading, validating and posing questions.

Questions live in ``grader/content/questions/<topic>.toml``, one file per
topic. A question with a ``variables`` table is a template: each time it is
posed it draws fresh numbers (batch, seq, d_model, heads...) and computes its
answer from expressions in the file (see ``grader.practice.formulas``), so
memorising an answer does not help.
"""

from __future__ import annotations

import functools
import itertools
import re
import tomllib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from grader.content.catalog import misconception_ids
from grader.errors import ContentError
from grader.i18n import LANGUAGES
from grader.paths import QUESTIONS_DIR
from grader.practice import formulas as quiz_formulas
from grader.practice.schema import (FILE_KEYS, KINDS, LEVELS,  # noqa: F401  (KINDS, LEVELS, UNLOCKABLE are public here)
                                    SCHEMA_VERSION, UNLOCKABLE, Choice, no_unknown_keys, question_fields, texts)

_PLACEHOLDER = re.compile(r"\{(\w+)(?::([^{}]*))?\}")
_DRAW_ATTEMPTS = 500
# Whole numbers from here on (FLOPs of a training run) read better as 4.2e+22.
_LARGEST_WRITTEN_OUT = 1e15


@dataclass(frozen=True, eq=False)
class Question:
    """A question as written in the bank (a template when ``variables`` is set)."""

    id: str
    topic: str
    level: str
    kind: str
    prompt: Mapping[str, str]
    explanation: Mapping[str, str]
    code: str = ""
    choices: tuple[Choice, ...] = ()
    steps: tuple[Mapping[str, str], ...] = ()
    answer: Any = None
    relative_tolerance: float = 1e-9
    absolute_tolerance: float = 1e-9
    variables: Mapping[str, tuple] = field(default_factory=dict)
    derived: Mapping[str, str] = field(default_factory=dict)
    require: tuple[str, ...] = ()
    physical: tuple[str, ...] = ()  # what every instance must obey (see the schema)
    misconceptions: tuple[str, ...] = ()
    unlocks: tuple[str, ...] = ()
    nudge: Mapping[str, str] = field(default_factory=dict)  # a pointer for a second try
    source: str = ""

    @property
    def is_template(self) -> bool:
        return bool(self.variables)

    @property
    def languages(self) -> tuple[str, ...]:
        return tuple(lang for lang in LANGUAGES if self.prompt.get(lang))

    def draw_values(self, rng: np.random.Generator) -> dict[str, Any]:
        """Fresh numbers for a template (empty for a fixed question)."""
        for _ in range(_DRAW_ATTEMPTS):
            chosen = {name: options[int(rng.integers(len(options)))]
                      for name, options in self.variables.items()}
            values = self.complete_values(chosen)
            if values is not None:
                return values
        raise ContentError(f"{self.source}: question {self.id!r}: 'require' is never met")

    def instances(self) -> Iterator[dict[str, Any]]:
        """Every combination of a template's variables that its ``require`` rules allow."""
        names = list(self.variables)
        for combination in itertools.product(*(self.variables[name] for name in names)):
            values = self.complete_values(dict(zip(names, combination)))
            if values is not None:
                yield values

    def answer_for(self, values: Mapping[str, Any]) -> Any:
        """The answer of a template instance (``values`` complete, derived ones included)."""
        return quiz_formulas.evaluate(self.answer, values) if isinstance(self.answer, str) else self.answer

    def broken_laws(self, values: Mapping[str, Any]) -> list[str]:
        """The ``physical`` rules this instance breaks (empty for a possible world)."""
        bound = dict(values, answer=self.answer_for(values))
        return [rule for rule in self.physical if not quiz_formulas.evaluate(rule, bound)]

    def complete_values(self, chosen: Mapping[str, Any]) -> dict[str, Any] | None:
        """``chosen`` plus the derived values, or None where a ``require`` rule fails."""
        values = dict(chosen)
        for name, expression in self.derived.items():
            values[name] = quiz_formulas.evaluate(expression, values)
        if all(quiz_formulas.evaluate(rule, values) for rule in self.require):
            return values
        return None

    def pose(self, rng: np.random.Generator, *, values: Mapping[str, Any] | None = None) -> PosedQuestion:
        """This question with numbers drawn and options shuffled, ready to ask.

        ``values`` fixes a template's variables instead of drawing them (they
        must satisfy its ``require`` rules).
        """
        if values is None:
            values = self.draw_values(rng)
        else:
            values = self.complete_values(values)
            if values is None:
                raise ValueError(f"{self.id}: the given values break its 'require' rules")
        answer = self.answer
        if isinstance(answer, str):
            answer = quiz_formulas.evaluate(answer, values)
        if self.kind in ("single-choice", "multiple-choice"):
            order = [int(index) for index in rng.permutation(len(self.choices))]
            options = tuple(self.choices[index].text for index in order)
            correct = frozenset(i for i, index in enumerate(order) if self.choices[index].correct)
            expected: Any = next(iter(correct)) if self.kind == "single-choice" else correct
        elif self.kind == "ordering":
            order = _shuffled_not_identity(len(self.steps), rng)
            options = tuple(self.steps[index] for index in order)
            expected = tuple(order.index(step) for step in range(len(self.steps)))
        else:
            options = ()
            expected = tuple(int(size) for size in answer) if self.kind == "shape" else answer
            if self.kind == "true-false":
                expected = bool(answer)
        display = dict(values, answer=_display(expected, self.kind))
        return PosedQuestion(
            question=self,
            values=values,
            prompt=_fill(self.prompt, display) if self.is_template else dict(self.prompt),
            explanation=_fill(self.explanation, display) if self.is_template
            else dict(self.explanation),
            options=options,
            expected=expected,
        )


@dataclass(frozen=True, eq=False)
class PosedQuestion:
    """A question as asked: concrete numbers, options in the order shown, the answer.

    ``expected`` is an option index (single choice), a frozenset of option
    indices (multiple choice), a number, a shape tuple, a tuple of option
    indices in the right order (ordering) or a bool.
    """

    question: Question
    values: Mapping[str, Any]
    prompt: Mapping[str, str]
    explanation: Mapping[str, str]
    options: tuple[Mapping[str, str], ...]
    expected: Any

    @property
    def id(self) -> str:
        return self.question.id

    @property
    def topic(self) -> str:
        return self.question.topic

    @property
    def kind(self) -> str:
        return self.question.kind


@dataclass(frozen=True, eq=False)
class Bank:
    """Every question, in file order, and each topic's title."""

    questions: tuple[Question, ...]
    titles: Mapping[str, Mapping[str, str]]

    def get(self, question_id: str) -> Question:
        for question in self.questions:
            if question.id == question_id:
                return question
        raise KeyError(question_id)

    def select(self, *, topics: Iterable[str] = (), levels: Iterable[str] = ()) -> list[Question]:
        topics, levels = set(topics), set(levels)
        return [q for q in self.questions
                if (not topics or q.topic in topics) and (not levels or q.level in levels)]


@functools.cache
def default_bank() -> Bank:
    """The bank shipped with the grader, loaded once."""
    return load_bank(QUESTIONS_DIR)


def questions_for_misconception(misconception_id: str) -> list[Question]:
    """The questions that probe ``misconception_id`` (a catalog id), basic ones first."""
    linked = [q for q in default_bank().questions if misconception_id in q.misconceptions]
    return sorted(linked, key=lambda question: LEVELS.index(question.level))


def load_bank(folder: Path) -> Bank:
    """Read and validate every ``*.toml`` in ``folder``; ContentError names file and key."""
    files = sorted(Path(folder).glob("*.toml"))
    if not files:
        raise ContentError(f"{folder}: no question files (*.toml) found")
    questions: list[Question] = []
    titles: dict[str, Mapping[str, str]] = {}
    seen: dict[str, str] = {}
    for path in files:
        topic, title, loaded = _load_file(path)
        titles[topic] = title
        for question in loaded:
            if question.id in seen:
                raise ContentError(f"{path}: id {question.id!r} is also used in {seen[question.id]}")
            seen[question.id] = path.name
            questions.append(question)
    return Bank(questions=tuple(questions), titles=titles)


def _load_file(path: Path) -> tuple[str, Mapping[str, str], list[Question]]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ContentError(f"{path}: not valid TOML: {error}") from None
    no_unknown_keys(data, FILE_KEYS, str(path))
    if data.get("schema_version") != SCHEMA_VERSION:
        raise ContentError(f"{path}: 'schema_version' must be {SCHEMA_VERSION}")
    if data.get("topic") != path.stem:
        raise ContentError(f"{path}: 'topic' must equal the file name, {path.stem!r}")
    title = texts(data.get("title"), f"{path}: 'title'")
    entries = data.get("questions")
    if not isinstance(entries, list) or not entries:
        raise ContentError(f"{path}: 'questions' must be a non-empty array of tables")
    return path.stem, title, [_question(entry, path, index) for index, entry in enumerate(entries)]


def _question(entry: Any, path: Path, index: int) -> Question:
    where = f"{path}: questions[{index}]"
    if not isinstance(entry, dict):
        raise ContentError(f"{where}: must be a table")
    where += f" (id {entry.get('id')!r})"
    question = Question(**question_fields(entry, where=where, misconceptions=misconception_ids()),
                        topic=path.stem, source=str(path))
    try:  # a trial draw, so a formula that cannot be evaluated fails at load time
        question.pose(np.random.default_rng(0))
    except quiz_formulas.FormulaError as error:
        raise ContentError(f"{where}: {error}") from None
    return question


def _fill(texts: Mapping[str, str], values: Mapping[str, Any]) -> dict[str, str]:
    def replace(match: re.Match) -> str:
        value, spec = values[match.group(1)], match.group(2) or ""
        return format(value, spec) if spec else str(value)

    return {lang: _PLACEHOLDER.sub(replace, text) for lang, text in texts.items()}


def _display(expected: Any, kind: str) -> str:
    if kind == "numeric":
        number = float(expected)
        if number.is_integer() and abs(number) < _LARGEST_WRITTEN_OUT:
            return f"{int(number):,}"
        return f"{number:,.4g}"
    if kind == "shape":
        return "(" + ", ".join(str(size) for size in expected) + ")"
    return str(expected)


def _shuffled_not_identity(count: int, rng: np.random.Generator) -> list[int]:
    """A shuffle of ``range(count)`` that is not already in order (when count > 1)."""
    order = [int(index) for index in rng.permutation(count)]
    if count > 1 and order == sorted(order):
        order = order[1:] + order[:1]
    return order


def choose_questions(*, bank: Bank, count: int, seed: int, topics: Iterable[str] = (),
                     levels: Iterable[str] = (), only: Sequence[str] | None = None,
                     balanced: bool = False) -> list[PosedQuestion]:
    """Pose ``count`` questions drawn with ``seed``.

    ``only`` (question ids, e.g. due cards or linked questions) keeps its order;
    otherwise questions are sampled from the topics and levels asked for.
    ``balanced``: as many questions of each level whatever the seed (``level_quotas``),
    so sheets worth points per level are all worth the same.
    """
    rng = np.random.default_rng(seed)
    if only is not None:
        pool = [bank.get(question_id) for question_id in only]
        pool = [q for q in pool if _matches(q, set(topics), set(levels))][:count]
    elif balanced:
        candidates = bank.select(topics=topics, levels=levels)
        pool = []
        for level, quota in level_quotas(candidates, count).items():
            of_level = [question for question in candidates if question.level == level]
            pool += [of_level[int(index)] for index in rng.permutation(len(of_level))[:quota]]
        pool = [pool[int(index)] for index in rng.permutation(len(pool))]
    else:
        candidates = bank.select(topics=topics, levels=levels)
        picked = rng.permutation(len(candidates))[:count]
        pool = [candidates[int(index)] for index in picked]
    return [question.pose(rng) for question in pool]


def level_quotas(candidates: Sequence[Question], count: int) -> dict[str, int]:
    """How many of ``count`` questions each level gets: its share of ``candidates`` (largest remainders),
    the same for every seed."""
    sizes: dict[str, int] = {}
    for question in candidates:
        sizes[question.level] = sizes.get(question.level, 0) + 1
    total = sum(sizes.values())
    count = min(count, total)
    if not total:
        return {}
    exact = {level: count * size / total for level, size in sorted(sizes.items())}
    quotas = {level: int(share) for level, share in exact.items()}
    for level in sorted(exact, key=lambda level: (quotas[level] - exact[level], level))[:count - sum(quotas.values())]:
        quotas[level] += 1
    return quotas


def _matches(question: Question, topics: set[str], levels: set[str]) -> bool:
    return (not topics or question.topic in topics) and (not levels or question.level in levels)
