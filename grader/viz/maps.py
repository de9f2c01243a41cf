"""Per-head attention maps and what can be measured on them, with no drawing.

A ``HeadMaps`` holds one sentence's weights ``(H, T, S)`` (from the reference
or a student's submission), each head's entropy, how alike the heads are, and
for a submission what is wrong with each head. ``grader.viz.heatmaps`` draws it.

Shape legend: ``H`` heads, ``T`` query length, ``S`` key length.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# A row "sums to 1" within this tolerance; float32 arithmetic stays well inside it.
ROW_SUM_TOLERANCE = 1e-4
# A submission's head "differs from the reference" beyond this absolute difference.
REFERENCE_TOLERANCE = 1e-4
# Pairs of heads at least this similar are named as candidates for removal.
ALIKE_THRESHOLD = 0.9


@dataclass(frozen=True)
class HeadProblem:
    """Why one head's weights are not a valid (or not the right) attention map."""

    kind: str  # a key of [problem] in viz.toml
    fields: dict

    def describe(self, texts, lang: str) -> str:
        return texts.text(f"problem.{self.kind}", lang, **self.fields)


@dataclass(frozen=True)
class HeadMaps:
    """The attention weights of one sentence, per head, and their measurements."""

    tokens: tuple[str, ...]
    weights: np.ndarray  # (H, T, S); NaN-filled when the submission's shape is wrong
    source: str  # "reference" or the submission's file name
    problems: tuple[HeadProblem | None, ...]  # one per head
    reference_weights: np.ndarray | None = None  # (H, T, S), when the reference is installed

    @property
    def num_heads(self) -> int:
        return len(self.problems)

    @property
    def entropies(self) -> np.ndarray:
        """Each head's mean row entropy in bits, ``(H,)``; NaN for an invalid head."""
        values = head_entropy(self.weights)
        return np.where([problem is None or problem.kind == "differs" for problem in self.problems], values, np.nan)

    @property
    def similarity(self) -> np.ndarray:
        """Head-by-head similarity, ``(H, H)``; NaN where a head is not a distribution."""
        return head_similarity(self.weights)

    def to_dict(self) -> dict:
        """The numbers behind the figures, JSON-ready (NaN becomes None)."""

        def plain(array: np.ndarray) -> list:
            return np.where(np.isfinite(array), array, None).tolist()

        return {
            "tokens": list(self.tokens),
            "source": self.source,
            "num_heads": self.num_heads,
            "weights": plain(self.weights),
            "entropy_bits": plain(self.entropies),
            "similarity": plain(self.similarity),
            "problems": [None if problem is None else {"kind": problem.kind, **problem.fields}
                         for problem in self.problems],
            "most_alike": most_alike_pair(self.similarity),
            "alike_pairs": alike_pairs(self.similarity),
        }


def head_entropy(weights: np.ndarray) -> np.ndarray:
    """Mean over query rows of each row's entropy in bits: ``(H, T, S)`` -> ``(H,)``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        # 0 · log 0 counts as 0: a key with no weight adds no uncertainty.
        terms = np.where(weights > 0, -weights * np.log2(weights), 0.0)  # (H, T, S)
    return terms.sum(axis=-1).mean(axis=-1)  # (H,)


def head_similarity(weights: np.ndarray) -> np.ndarray:
    """``1 - `` Jensen–Shannon distance (base 2) between heads, averaged over queries.

    ``(H, T, S)`` -> ``(H, H)`` in [0, 1]: 1 for identical maps, 0 for maps that
    never attend to the same key. A head that is not a distribution gives NaN.
    """
    valid = _is_distribution(weights)  # (H,)
    p = weights[:, None]  # (H, 1, T, S)
    q = weights[None, :]  # (1, H, T, S)
    middle = (p + q) / 2  # (H, H, T, S)
    with np.errstate(divide="ignore", invalid="ignore"):
        divergence = 0.5 * _kl_terms(p, middle) + 0.5 * _kl_terms(q, middle)  # (H, H, T)
    distance = np.sqrt(np.clip(divergence, 0.0, 1.0))  # (H, H, T)
    similarity = 1.0 - distance.mean(axis=-1)  # (H, H)
    similarity[~valid, :] = np.nan
    similarity[:, ~valid] = np.nan
    return similarity


def _kl_terms(p: np.ndarray, middle: np.ndarray) -> np.ndarray:
    return np.where(p > 0, p * np.log2(p / middle), 0.0).sum(axis=-1)


def _is_distribution(weights: np.ndarray) -> np.ndarray:
    """Per head: finite, non-negative, every row summing to 1. ``(H, T, S)`` -> ``(H,)``."""
    finite = np.isfinite(weights).all(axis=(-2, -1))
    with np.errstate(invalid="ignore"):
        non_negative = (weights >= 0).all(axis=(-2, -1))
        normalized = (np.abs(weights.sum(axis=-1) - 1.0) <= ROW_SUM_TOLERANCE).all(axis=-1)
    return finite & non_negative & normalized


def most_alike_pair(similarity: np.ndarray) -> dict | None:
    """The two distinct heads (numbered from 0) with the highest similarity, or None."""
    count = similarity.shape[0]
    best = None
    for first in range(count):
        for second in range(first + 1, count):
            value = similarity[first, second]
            if np.isfinite(value) and (best is None or value > best["similarity"]):
                best = {"first": first, "second": second, "similarity": float(value)}
    return best


def find_head_problems(
    weights: np.ndarray, *, expected_shape: tuple[int, ...], reference: np.ndarray | None = None
) -> tuple[tuple[HeadProblem | None, ...], np.ndarray]:
    """What is wrong with each head of a submission's weights ``(B, H, T, S)`` (batch 0 is used).

    Returns the problems (one per expected head, None for a good head) and the
    weights to draw, ``(H, T, S)``; a wrong shape gives NaN maps, all flagged.
    """
    batch, heads, length, key_length = expected_shape
    array = np.asarray(weights)
    if array.shape != tuple(expected_shape) or not np.issubdtype(array.dtype, np.number):
        problem = HeadProblem("wrong_shape", {"got": tuple(np.shape(array)), "expected": tuple(expected_shape)})
        return (problem,) * heads, np.full((heads, length, key_length), np.nan)
    maps = array[0].astype(float)  # (H, T, S)
    problems = []
    for head in range(heads):
        problems.append(_head_problem(maps[head], None if reference is None else reference[head]))
    return tuple(problems), maps


def _head_problem(head: np.ndarray, reference: np.ndarray | None) -> HeadProblem | None:
    """The first thing wrong with one head's ``(T, S)`` map, checked from worst to mildest."""
    if not np.isfinite(head).all():
        return HeadProblem("not_finite", {})
    if (head < 0).any():
        return HeadProblem("negative", {"value": f"{head.min():.3g}"})
    sums = head.sum(axis=-1)  # (T,)
    if (np.abs(sums - 1.0) > ROW_SUM_TOLERANCE).any():
        return HeadProblem("rows_not_normalized", {"low": f"{sums.min():.3g}", "high": f"{sums.max():.3g}"})
    if reference is not None:
        difference = float(np.abs(head - reference).max())
        if difference > REFERENCE_TOLERANCE:
            return HeadProblem("differs", {"value": f"{difference:.3g}"})
    return None


def alike_pairs(similarity: np.ndarray, threshold: float = ALIKE_THRESHOLD) -> list[list[int]]:
    """Pairs of heads (numbered from 0) at least ``threshold`` similar: candidates for removal."""
    count = similarity.shape[0]
    return [[first, second] for first in range(count) for second in range(first + 1, count)
            if np.isfinite(similarity[first, second]) and similarity[first, second] >= threshold]


def parse_head_subset(text: str, num_heads: int) -> tuple[int, ...] | None:
    """Head numbers from ``0,2,4-6`` (numbered from 0, ranges inclusive) as sorted indices.

    Returns None when ``text`` does not name heads between 0 and ``num_heads - 1``.
    """
    chosen: set[int] = set()
    for part in text.replace(" ", "").split(","):
        bounds = part.split("-")
        if not part or len(bounds) > 2 or not all(bound.isdigit() for bound in bounds):
            return None
        low, high = int(bounds[0]), int(bounds[-1])
        if not 0 <= low <= high < num_heads:
            return None
        chosen.update(range(low, high + 1))
    return tuple(sorted(chosen))
