"""Winnowed fingerprints of normalized code (Schleimer, Wilkerson and Aiken's winnowing, as MOSS uses it).

The winnowing is copydetect's (``copydetect.utils.winnow``): a maintained
implementation of the algorithm behind MOSS and Gradescope's similarity,
which guarantees that any match of ``K + WINDOW - 1`` tokens or more shares
at least one fingerprint, while keeping about one k-gram in ``WINDOW / 2``.
The k-gram hashes are our own: copydetect hashes with Python's ``hash()``,
salted per process, so its fingerprints (and so which passages a report
shows) would change from one run to the next; a hash of the token texts
(BLAKE2) folded into a polynomial gives the same report for the same class
every time. Each unit (function, method) is hashed on its own, so no k-gram
spans two functions and their order does not matter.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass

import numpy as np

from grader.similarity.tokens import Tokens

K = 9  # tokens per k-gram: `e = np.exp(x - m)` is about that long
WINDOW = 4  # a match of K + WINDOW - 1 = 12 tokens or more is always seen
_BASE = np.uint64(1_000_003)
_MASK = np.uint64((1 << 52) - 1)  # exact as a float64 (copydetect's pure-Python winnowing compares floats)


@dataclass(frozen=True)
class Fingerprints:
    """The selected k-gram hashes of a document and where each k-gram starts (a token index)."""

    hashes: np.ndarray  # (F,) int64
    starts: np.ndarray  # (F,) int64

    @property
    def unique(self) -> np.ndarray:
        return np.unique(self.hashes)


@functools.lru_cache(maxsize=65536)
def _token_hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")


def kgram_hashes(ids: np.ndarray, k: int = K) -> np.ndarray:
    """The hash of every k-gram of a sequence of token hashes: (N,) -> (N - k + 1,)."""
    if len(ids) < k:
        return np.zeros(0, dtype=np.int64)
    count = len(ids) - k + 1
    with np.errstate(over="ignore"):
        rolled = np.zeros(count, dtype=np.uint64)
        for offset in range(k):  # wraps modulo 2**64, as a polynomial hash should
            rolled = rolled * _BASE + ids[offset:offset + count]
    return (rolled & _MASK).astype(np.int64)


def token_ids(tokens: Tokens) -> np.ndarray:
    return np.fromiter((_token_hash(token.text) for token in tokens.tokens), dtype=np.uint64,
                       count=len(tokens.tokens))


def fingerprint(tokens: Tokens, *, k: int = K, window: int = WINDOW) -> Fingerprints:
    """The winnowed fingerprints of every unit of ``tokens``."""
    from copydetect.utils import winnow

    ids = token_ids(tokens)
    hashes, starts = [], []
    for unit in tokens.units:
        grams = kgram_hashes(ids[unit.start:unit.end], k)
        if not len(grams):
            continue
        selected, where = winnow(grams, window_size=min(window, len(grams)), remove_duplicates=False)
        hashes.append(np.asarray(selected, dtype=np.int64))
        starts.append(np.asarray(where, dtype=np.int64) + unit.start)
    if not hashes:
        return Fingerprints(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    return Fingerprints(np.concatenate(hashes), np.concatenate(starts))


def every_kgram(tokens: Tokens, *, k: int = K) -> np.ndarray:
    """Every k-gram hash of ``tokens``, unwinnowed: the boilerplate a fingerprint must not be part of."""
    ids = token_ids(tokens)
    grams = [kgram_hashes(ids[unit.start:unit.end], k) for unit in tokens.units]
    return np.unique(np.concatenate(grams)) if grams else np.zeros(0, dtype=np.int64)
