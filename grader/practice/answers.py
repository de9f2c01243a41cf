"""Reading typed answers leniently and checking them against a posed question.

Choices are labelled A, B, C... and ordering steps 1, 2, 3...; answers may be
typed with full-width characters (a Chinese input method), any brackets and
any separators: ``(2, 8, 10, 64)``, ``2x8x10x64``, ``[2 8 10 64]`` and
``（2，8，10，64）`` are the same shape.
"""

from __future__ import annotations

import math
import re
import string
import unicodedata
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: reading an answer needs the question's data, not the bank loaded
    from grader.practice.bank import PosedQuestion

LETTERS = string.ascii_uppercase
_SEPARATORS = re.compile(r"[\s,;、()\[\]{}<>x×*]+")
_SHAPE_PREFIX = re.compile(r"^(torch\.size|np\.shape|shape|size)?\s*=?\s*")
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)(e[+-]?\d+)?$")
_SPACED_THOUSANDS = re.compile(r"[+-]?\d{1,3}( \d{3})+(\.\d*)?")
_MULTIPLIERS = {"k": 1e3, "m": 1e6, "g": 1e9, "b": 1e9, "t": 1e12}
_TRUE = {"t", "true", "y", "yes", "1", "对", "是", "正确", "真", "√"}
_FALSE = {"f", "false", "n", "no", "0", "错", "否", "错误", "假", "×"}


@dataclass(frozen=True)
class Verdict:
    """How an answer was read: ``valid`` is False when it could not be parsed at all."""

    valid: bool
    correct: bool


def normalize(text: str) -> str:
    """Full-width forms folded to ASCII, lowercase, outer whitespace removed."""
    return unicodedata.normalize("NFKC", text).strip().lower()


def parse_shape(text: str) -> tuple[int, ...] | None:
    """A shape from loosely typed text, or None when it is not a list of sizes."""
    cleaned = _SHAPE_PREFIX.sub("", normalize(text), count=1)
    tokens = [token for token in _SEPARATORS.split(cleaned) if token]
    if not tokens or not all(token.isdigit() for token in tokens):
        return None
    return tuple(int(token) for token in tokens)


_FRACTION = re.compile(r"^\s*([+-]?\d+(?:\.\d*)?)\s*/\s*(\d+(?:\.\d*)?)\s*$")


def parse_number(text: str) -> float | None:
    """A number such as ``1,048,576``, ``1_048_576``, ``1.05e6``, ``2.4M``, ``12 k`` or ``1/4``.

    A trailing ``%`` (or a Chinese keyboard's ``％``) is read as the unit of a
    question asked in percent: ``42.5%`` is 42.5, not 0.425.
    """
    cleaned = re.sub(r"\s*%$", "", normalize(text))
    fraction = _FRACTION.match(cleaned)
    if fraction:  # a ratio typed as a fraction, e.g. "1/4" for 0.25
        denominator = float(fraction.group(2))
        return float(fraction.group(1)) / denominator if denominator else None
    if _SPACED_THOUSANDS.fullmatch(cleaned):
        cleaned = cleaned.replace(" ", "")
    cleaned = re.sub(r"[,_']|\s+(?=[kmgbt]$)", "", cleaned)  # "12 k" keeps its suffix
    multiplier = 1.0
    if cleaned[-1:] in _MULTIPLIERS and _NUMBER.match(cleaned[:-1]):
        cleaned, multiplier = cleaned[:-1], _MULTIPLIERS[cleaned[-1]]
    if not _NUMBER.match(cleaned):
        return None
    return float(cleaned) * multiplier


def parse_letters(text: str, count: int) -> list[int] | None:
    """Option indices from ``B``, ``a, c``, ``AC`` or ``1 3``; None if any is out of range."""
    cleaned = normalize(text)
    tokens = [token for token in re.split(r"[\s,;、/&+]+|\band\b", cleaned) if token]
    if len(tokens) == 1 and tokens[0].isalpha():
        tokens = list(tokens[0])  # "ac" means A and C
    indices = []
    for token in tokens:
        if len(token) == 1 and token.isalpha() and token.isascii():
            index = LETTERS.lower().index(token)
        elif token.isdigit():
            index = int(token) - 1
        else:
            return None
        if not 0 <= index < count:
            return None
        indices.append(index)
    return indices or None


def parse_order(text: str, count: int) -> list[int] | None:
    """Step indices from ``3 1 2 4``, ``3,1,2,4`` or ``3124``; None unless a permutation."""
    cleaned = normalize(text)
    tokens = [token for token in re.split(r"[\s,;、>\-→]+", cleaned) if token]
    if len(tokens) == 1 and tokens[0].isdigit() and count <= 9:
        tokens = list(tokens[0])
    if not all(token.isdigit() for token in tokens):
        return None
    indices = [int(token) - 1 for token in tokens]
    return indices if sorted(indices) == list(range(count)) else None


def parse_truth(text: str) -> bool | None:
    """True or False from English or Chinese words (true/yes/t/对/是...)."""
    cleaned = normalize(text).rstrip(".!。！")
    if cleaned in _TRUE:
        return True
    if cleaned in _FALSE:
        return False
    return None


def read_answer(posed: PosedQuestion, text: str) -> Any:
    """The typed answer as the same kind of value as ``posed.expected``, or None."""
    kind = posed.kind
    if kind == "single-choice":
        indices = parse_letters(text, len(posed.options))
        return indices[0] if indices and len(indices) == 1 else None
    if kind == "multiple-choice":
        indices = parse_letters(text, len(posed.options))
        return frozenset(indices) if indices else None
    if kind == "ordering":
        order = parse_order(text, len(posed.options))
        return tuple(order) if order else None
    if kind == "numeric":
        return parse_number(text)
    if kind == "shape":
        return parse_shape(text)
    return parse_truth(text)


def check(posed: PosedQuestion, text: str) -> Verdict:
    """Whether ``text`` answers ``posed`` (numbers within the question's tolerance)."""
    given = read_answer(posed, text)
    if given is None:
        return Verdict(valid=False, correct=False)
    if posed.kind == "numeric":
        question = posed.question
        expected = float(posed.expected)
        correct = math.isclose(given, expected, rel_tol=question.relative_tolerance,
                               abs_tol=question.absolute_tolerance)
        return Verdict(valid=True, correct=correct)
    return Verdict(valid=True, correct=given == posed.expected)


def _digits(relative_tolerance: float) -> int:
    """Significant digits that show an answer as precisely as the question asks (3 for a 0.5 % tolerance)."""
    for digits, tolerance in ((3, 0.005), (4, 0.0005), (5, 0.00005)):
        if relative_tolerance >= tolerance:
            return digits
    return 6


def expected_text(posed: PosedQuestion, lang: str) -> str:
    """The right answer as a student would type it."""
    expected = posed.expected
    kind = posed.kind
    if kind == "single-choice":
        return LETTERS[expected]
    if kind == "multiple-choice":
        return ", ".join(LETTERS[index] for index in sorted(expected))
    if kind == "ordering":
        return " ".join(str(index + 1) for index in expected)
    if kind == "numeric":
        number = float(expected)
        if number.is_integer() and abs(number) < 1e15:
            return f"{int(number):,}"
        return f"{number:.{_digits(posed.question.relative_tolerance)}g}"
    if kind == "shape":
        return "(" + ", ".join(str(size) for size in expected) + ")"
    words = {"en": ("false", "true"), "zh": ("错", "对")}
    return words.get(lang, words["en"])[bool(expected)]

