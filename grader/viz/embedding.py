"""A small, deterministic token embedding and weight initialisation for pictures.

The pictures of ``mha viz`` and ``mha demo`` must be the same on every machine
and every run, without a trained model. So:

- **Tokens.** A sentence is split on whitespace, so ``猫 追 老鼠`` keeps the
  word ``老鼠`` whole. A sentence with no spaces at all that contains Chinese,
  Japanese or Korean characters is split into single characters instead
  (``猫追老鼠`` gives four tokens), since those scripts do not mark words.
- **Token vectors.** Each token's UTF-8 bytes are hashed with SHA-256; the
  first 8 bytes of the digest seed a NumPy generator that draws the token's
  ``D`` features from a standard normal distribution. The same word always
  gets the same vector, whatever the sentence or machine.
- **Positions.** The sinusoidal position code of the original Transformer is
  added, so a repeated word ("the ... the") still gets two different rows.
- **Weights.** ``W_Q, W_K, W_V, W_O`` are drawn from one generator seeded by
  ``seed`` with standard deviation ``gain / sqrt(D)``. They depend on ``D``
  and the seed only, never on ``H``: changing the number of heads splits the
  same projections differently, which is what the explainer wants to show.

Shape legend: ``T`` tokens, ``D`` model width.
"""

from __future__ import annotations

import hashlib
import re

import numpy as np

# Characters of the CJK scripts that are written without spaces between words.
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")

# A gain above 1 sharpens the untrained heads enough that they visibly differ.
DEFAULT_GAIN = 1.5
WEIGHT_NAMES = ("W_Q", "W_K", "W_V", "W_O")


def tokenize(sentence: str) -> list[str]:
    """Split ``sentence`` into tokens (see the module docstring for the rule)."""
    chunks = sentence.split()
    if len(chunks) == 1 and _CJK.search(chunks[0]):
        return list(chunks[0])
    return chunks


def contains_cjk(tokens: list[str]) -> bool:
    """Whether any token needs a CJK-capable font."""
    return any(_CJK.search(token) for token in tokens)


def token_vector(token: str, d_model: int) -> np.ndarray:
    """The ``(D,)`` vector of one token, drawn from a generator seeded by its SHA-256."""
    digest = hashlib.sha256(token.encode("utf-8")).digest()
    generator = np.random.default_rng(int.from_bytes(digest[:8], "big"))
    return generator.standard_normal(d_model)  # (D,)


def positional_code(length: int, d_model: int) -> np.ndarray:
    """The sinusoidal position code, ``(T, D)``: sin on even features, cos on odd."""
    positions = np.arange(length)[:, None]  # (T, 1)
    pair_index = np.arange(d_model)[None, :] // 2  # (1, D)
    angles = positions / np.power(10000.0, 2 * pair_index / d_model)  # (T, D)
    return np.where(np.arange(d_model) % 2 == 0, np.sin(angles), np.cos(angles))


def embed(tokens: list[str], d_model: int) -> np.ndarray:
    """The input rows of a sentence, ``(T, D)``: token vector plus position code."""
    if not tokens:
        raise ValueError("cannot embed an empty list of tokens")
    vectors = np.stack([token_vector(token, d_model) for token in tokens])  # (T, D)
    return vectors + positional_code(len(tokens), d_model)


def init_weights(d_model: int, *, seed: int = 0, gain: float = DEFAULT_GAIN) -> dict[str, np.ndarray]:
    """``W_Q, W_K, W_V, W_O``, each ``(D, D)``, from a generator seeded by ``seed``."""
    generator = np.random.default_rng(seed)
    scale = gain / np.sqrt(d_model)
    return {name: generator.normal(0.0, scale, (d_model, d_model)) for name in WEIGHT_NAMES}
