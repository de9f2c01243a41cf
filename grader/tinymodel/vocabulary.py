"""The tiny model's vocabulary: a start marker and the 26 lowercase letters.

A sentence is read as whitespace-separated tokens, each one letter
(``"a b c a b c"``), and the model always sees the start marker ``<s>``
first, as it did in training: heads with nothing to do park their weight on
it. Shape legend: ``B`` batch, ``T`` tokens (the start marker included).
"""

from __future__ import annotations

import numpy as np

from grader.errors import UsageError
from grader.tinymodel.tokens import (LETTERS, START, START_ID,  # noqa: F401 - re-exported for readers of sentences
                                     TOKENS)

_IDS = {token: index for index, token in enumerate(TOKENS)}


class UnknownTokens(UsageError):
    """Tokens the model has never seen; the message lists the vocabulary.

    ``unknown`` holds the offending tokens, so a caller can word the message
    in the reader's language (``grader.viz`` does).
    """

    def __init__(self, unknown: tuple[str, ...]):
        self.unknown = unknown
        listed = ", ".join(repr(token) for token in unknown)
        super().__init__(
            f"the trained model does not know {listed}. Its vocabulary is the single lowercase letters "
            f"{' '.join(LETTERS)} (the start marker {START} is added for you); separate them by spaces, "
            'e.g. "a b c d a b c d"'
        )


def tokens_of(sentence: str) -> tuple[str, ...]:
    """The tokens the model reads for ``sentence``: the start marker, then one per letter."""
    words = tuple(sentence.split())
    unknown = tuple(dict.fromkeys(word for word in words if word not in _IDS or word == START))
    if unknown:
        raise UnknownTokens(unknown)
    return (START, *words)


def encode(sentence: str) -> np.ndarray:
    """Token ids of ``sentence``, start marker first: ``(T,)`` integers."""
    return np.array([_IDS[token] for token in tokens_of(sentence)], dtype=np.int64)


def decode(ids: np.ndarray) -> tuple[str, ...]:
    """The tokens of ``(T,)`` ids."""
    return tuple(TOKENS[int(index)] for index in ids)
