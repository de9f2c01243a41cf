"""The matching passages of two documents: where in each file, in lines, the shared fingerprints lie.

Each fingerprint both documents hold (and that counts: not boilerplate, not
common) places a k-gram in each file. Neighbouring k-grams that follow each
other in both files, within the same function in each, make one passage,
shown as a line range in either file (and the notebook cell it is in).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from grader.similarity.fingerprints import WINDOW, Fingerprints, K
from grader.similarity.tokens import Tokens

MAX_PASSAGES = 40  # per pair, the longest first
MIN_TOKENS = K + WINDOW - 1  # a shorter passage (one k-gram, a `def f(a, b): return`) is shown as no evidence
_GAP = K + WINDOW  # tokens between two k-gram starts that still make one passage


@dataclass(frozen=True)
class Side:
    """A passage in one file: lines ``start``..``end`` (1-based, inclusive) of a cell, in a function."""

    cell: str  # "cell 3" in a notebook, "" in a script
    start: int
    end: int
    function: str  # "" for top-level statements

    def to_dict(self) -> dict:
        data = {"start_line": self.start, "end_line": self.end, "function": self.function}
        if self.cell:
            data["cell"] = self.cell
        return data

    @classmethod
    def from_dict(cls, data: dict) -> Side:
        return cls(data.get("cell", ""), data["start_line"], data["end_line"], data.get("function", ""))


@dataclass(frozen=True)
class Passage:
    first: Side
    second: Side
    tokens: int  # normalized tokens matched, in the first file

    def to_dict(self) -> dict:
        return {"first": self.first.to_dict(), "second": self.second.to_dict(), "tokens": self.tokens}

    @classmethod
    def from_dict(cls, data: dict) -> Passage:
        return cls(Side.from_dict(data["first"]), Side.from_dict(data["second"]), data["tokens"])


@dataclass(frozen=True)
class Text:
    """What evidence needs of a document: its tokens, fingerprints and cell labels."""

    tokens: Tokens
    fingerprints: Fingerprints
    labels: tuple[str, ...]


def passages(first: Text, second: Text, *, counting: np.ndarray) -> tuple[Passage, ...]:
    """The passages where ``first`` and ``second`` share a fingerprint of ``counting`` (sorted hashes)."""
    shared = np.intersect1d(np.intersect1d(first.fingerprints.hashes, second.fingerprints.hashes), counting)
    if not len(shared):
        return ()
    where_second = defaultdict(list)
    for value, start in zip(second.fingerprints.hashes.tolist(), second.fingerprints.starts.tolist()):
        where_second[value].append(start)
    wanted = set(shared.tolist())
    matches = sorted({(int(start), int(other))
                      for value, start in zip(first.fingerprints.hashes.tolist(), first.fingerprints.starts.tolist())
                      if value in wanted for other in where_second[value]})
    groups: list[list[tuple[int, int]]] = []
    for start, other in matches:
        for group in reversed(groups[-4:]):  # the few open passages that could go on
            last_start, last_other = group[-1]
            if (0 < start - last_start <= _GAP and 0 < other - last_other <= _GAP
                    and _unit(first, start) == _unit(first, last_start)
                    and _unit(second, other) == _unit(second, last_other)):
                group.append((start, other))
                break
        else:
            groups.append([(start, other)])
    found = [Passage(_side(first, [start for start, _ in group]), _side(second, [other for _, other in group]),
                     min(group[-1][0] + K, _unit_end(first, group[-1][0])) - group[0][0])
             for group in groups]
    found.sort(key=lambda passage: (-passage.tokens, passage.first.cell, passage.first.start))
    kept: list[Passage] = []
    for passage in (passage for passage in found if passage.tokens >= MIN_TOKENS):
        # a repeat whose lines longer passages already show, on both sides, says nothing new
        if not (any(_within(passage.first, longer.first) for longer in kept)
                and any(_within(passage.second, longer.second) for longer in kept)):
            kept.append(passage)
    return tuple(kept[:MAX_PASSAGES])


def _within(inner: Side, outer: Side) -> bool:
    return inner.cell == outer.cell and outer.start <= inner.start and inner.end <= outer.end


def _unit(text: Text, index: int) -> int:
    return text.tokens.tokens[index].unit


def _unit_end(text: Text, index: int) -> int:
    return text.tokens.units[_unit(text, index)].end


def _side(text: Text, starts: list[int]) -> Side:
    tokens = text.tokens.tokens
    first, last = tokens[starts[0]], tokens[min(starts[-1] + K, _unit_end(text, starts[-1])) - 1]
    label = text.labels[first.cell] if first.cell < len(text.labels) else ""
    return Side(label, first.line, max(first.line, last.line, last.last_line), text.tokens.units[first.unit].name)
