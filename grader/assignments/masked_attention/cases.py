"""Cases and buggy twins of the masked-attention exercise (``solutions/masked_attention.py``).

Graded functions: ``causal_mask``, ``padding_mask``, ``masked_softmax`` and
``masked_attention`` (which uses ``masked_softmax``, so a mistake there shows
in both). Masks given to ``masked_softmax`` and ``masked_attention`` are the
grader's own, so each function is checked on its own.
"""

from __future__ import annotations

import numpy as np

from grader.assignments.twinning import CaseSets, Twin, floats, with_expectations
from grader.grading.case import Case, Sizes, stability_logits

ASSIGNMENT = "masked_attention"
PUBLIC_SEED = 20240701
LARGE_NEGATIVE = -1e9  # the finite fill many implementations use instead of -inf


# ---- twins ------------------------------------------------------------------------------
def _stable_softmax(x):
    shifted = x - np.max(x, axis=-1, keepdims=True)
    exponentials = np.exp(shifted)
    return exponentials / np.sum(exponentials, axis=-1, keepdims=True)


def _filled(fill, *, invert=False):
    """Softmax of the scores with masked entries replaced by ``fill`` (no special fully-masked rows)."""
    def make(module):
        def masked_softmax(scores, mask):
            mask = np.broadcast_to(mask, scores.shape)
            return _stable_softmax(np.where(~mask if invert else mask, scores, fill))
        return masked_softmax
    return make


def _inverted_reference(module):
    reference = module.masked_softmax

    def masked_softmax(scores, mask):
        return reference(scores, ~np.broadcast_to(mask, scores.shape))
    return masked_softmax


def _after_softmax(module):
    def masked_softmax(scores, mask):
        return _stable_softmax(scores) * np.broadcast_to(mask, scores.shape)
    return masked_softmax


def _causal_shifted(shift, *, offset=True):
    def make(module):
        def causal_mask(T, S=None):
            S = T if S is None else S
            return np.tril(np.ones((T, S), dtype=bool), k=(S - T if offset else 0) + shift)
        return causal_mask
    return make


def _padding_flat(module):
    def padding_mask(lengths, S):
        return np.arange(S)[None, :] < np.asarray(lengths)[:, None]  # (B, S): lines B up with T
    return padding_mask


TWINS: tuple[Twin, ...] = (
    Twin("mask-after-softmax", "weights zeroed after a plain softmax", "masked_softmax", _after_softmax),
    Twin("mask-zero-fill", "masked scores set to 0 (or scores * mask)", "masked_softmax", _filled(0.0)),
    Twin("mask-inverted", "True treated as blocked", "masked_softmax", _inverted_reference),
    Twin("mask-inverted", "True treated as blocked, filled with -inf", "masked_softmax", _filled(-np.inf, invert=True)),
    Twin("mask-inverted", "True treated as blocked, filled with -1e9", "masked_softmax",
         _filled(LARGE_NEGATIVE, invert=True)),
    Twin("mask-fully-masked-nan", "-inf fill: a fully masked row is 0/0", "masked_softmax", _filled(-np.inf)),
    Twin("mask-fully-masked-nan", "-1e9 fill: a fully masked row spreads over masked keys", "masked_softmax",
         _filled(LARGE_NEGATIVE)),
    Twin("mask-causal-off-by-one", "diagonal excluded", "causal_mask", _causal_shifted(-1)),
    Twin("mask-causal-off-by-one", "one future token included", "causal_mask", _causal_shifted(1)),
    Twin("mask-causal-no-offset", "np.tril of (T, S) from the top-left corner", "causal_mask",
         _causal_shifted(0, offset=False)),
    Twin("mask-padding-broadcast", "returns (B, S)", "padding_mask", _padding_flat),
)

LEGENDS = {
    "causal_mask": "(T, S)",
    "padding_mask": "(B, 1, 1, S)",
    "masked_softmax": "scores.shape",
    "masked_attention": ("(B, H, T, d_k)", "(B, H, T, S)"),
}
CALL_TEXT = {
    "causal_mask": "causal_mask(T, S)",
    "padding_mask": "padding_mask(lengths, S)",
    "masked_softmax": "masked_softmax(scores, mask)",
    "masked_attention": "masked_attention(Q, K, V, mask)",
}
ARGUMENT_NAMES = {
    "causal_mask": ("T", "S"), "padding_mask": ("lengths", "S"),
    "masked_softmax": ("scores", "mask"), "masked_attention": ("Q", "K", "V", "mask"),
}


# ---- cases --------------------------------------------------------------------------------
def _case(name: str, prefix: str, function: str, args: tuple) -> Case:
    case = Case(id=f"{prefix}{name}", function=function, args=args, call_text=CALL_TEXT[function],
                legend=LEGENDS[function], argument_names=ARGUMENT_NAMES[function],
                mutation_id="mask-mutates-input")
    return with_expectations(case, ASSIGNMENT, TWINS)


def _reference_causal(T: int, S: int) -> np.ndarray:
    return np.arange(S)[None, :] <= np.arange(S - T, S)[:, None]  # (T, S)


def _lengths(rng: np.random.Generator, B: int, S: int, *, empty: bool = False) -> np.ndarray:
    """Lengths with one full and one shorter sequence (and one empty one when asked)."""
    lengths = rng.integers(1, S, B)
    lengths[0] = S
    if empty:
        lengths[-1] = 0
    return lengths.astype(np.int64)


def _padding(lengths: np.ndarray, S: int) -> np.ndarray:
    return (np.arange(S)[None, :] < lengths[:, None])[:, None, None, :]  # (B, 1, 1, S)


def _rows_with_one_fully_masked(rng: np.random.Generator, rows: int, S: int) -> np.ndarray:
    mask = rng.random((rows, S)) < 0.6
    mask[np.arange(rows), rng.integers(0, S, rows)] = True  # every row keeps a key...
    mask[1] = False  # ...but one, which keeps none
    return mask


def build_cases(rng: np.random.Generator, sizes: Sizes, prefix: str) -> dict[str, Case]:
    """Every case of the masked-attention exercise for these sizes, keyed by name."""
    B, H, T, S, d_k = sizes.B, sizes.H, sizes.T, sizes.S, sizes.d_k
    long_keys = T + S  # S > T: a cache of earlier tokens in front of the queries
    lengths, lengths_with_empty = _lengths(rng, B, S), _lengths(rng, B, S, empty=True)
    stability = stability_logits(rng)  # (4, 5)
    stability_mask = np.ones(stability.shape, dtype=bool)
    stability_mask[0, 0] = stability_mask[2, [0, 3]] = False  # kept entries lie ~800 below masked ones
    specs = [
        ("causal/square", "causal_mask", (T,)),
        ("causal/cached", "causal_mask", (T, long_keys)),
        ("causal/one-step", "causal_mask", (1, S)),
        ("padding/lengths", "padding_mask", (lengths, S)),
        ("softmax/causal", "masked_softmax", (floats(rng, B, H, T, T, scale=2.0), _reference_causal(T, T))),
        ("softmax/padding", "masked_softmax", (floats(rng, B, H, T, S, scale=2.0), _padding(lengths, S))),
        ("softmax/fully-masked", "masked_softmax",
         (floats(rng, T, S, scale=2.0), _rows_with_one_fully_masked(rng, T, S))),
        ("softmax/stability", "masked_softmax", (stability, stability_mask)),
        ("attention/causal", "masked_attention",
         (floats(rng, B, H, T, d_k), floats(rng, B, H, T, d_k), floats(rng, B, H, T, d_k), _reference_causal(T, T))),
        ("attention/padding", "masked_attention",
         (floats(rng, B, H, T, d_k), floats(rng, B, H, S, d_k), floats(rng, B, H, S, d_k), _padding(lengths, S))),
        ("attention/cached-causal-padding", "masked_attention",
         (floats(rng, B, H, T, d_k), floats(rng, B, H, long_keys, d_k), floats(rng, B, H, long_keys, d_k),
          _reference_causal(T, long_keys) & _padding(_lengths(rng, B, long_keys), long_keys))),
        ("attention/no-mask", "masked_attention",
         (floats(rng, B, H, T, d_k), floats(rng, B, H, S, d_k), floats(rng, B, H, S, d_k))),
        ("attention/empty-sequence", "masked_attention",
         (floats(rng, B, H, T, d_k), floats(rng, B, H, S, d_k), floats(rng, B, H, S, d_k),
          _padding(lengths_with_empty, S))),
    ]
    return {name: _case(name, prefix, function, args) for name, function, args in specs}


CASES = CaseSets(build_cases, PUBLIC_SEED)
public_cases, hidden_cases = CASES.public, CASES.hidden
