"""Cases and buggy twins of the normalisation exercise (``solutions/layer_norm.py``).

Graded: ``layer_norm``, ``rms_norm`` and ``pre_norm_block`` (which normalises
with ``layer_norm``, so a LayerNorm mistake is named in the block too, as its
root cause). Inputs are chosen so that each mistake shows: tokens with means
far from zero and spreads far from one (a missing centring or rescaling, or
statistics over the wrong axis, change every value), nearly constant tokens
whose variance is below ``eps`` (where eps outside the root matters), a large
``eps`` given as a keyword, and gains and shifts that differ per feature.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grader.assignments.twinning import CaseSets, Twin, floats, with_expectations
from grader.grading.case import Case

ASSIGNMENT = "layer_norm"
PUBLIC_SEED = 20241109
LARGE_LOGIT = 1500.0  # the spread of the block's scores: beyond 709, where an unshifted float64 exp overflows
CLEAR_GAP = 40.0  # the least gap between a row's two largest scores in the large-score case (no near ties)


@dataclass(frozen=True)
class NormSizes:
    B: int
    T: int
    H: int
    d_k: int

    @property
    def D(self) -> int:
        return self.H * self.d_k


PUBLIC_SIZES = NormSizes(B=2, T=5, H=3, d_k=4)  # D = 12; every size distinct


def draw_sizes(rng: np.random.Generator) -> NormSizes:
    """Distinct sizes, with a model width of 6 to 24 (D - 1 and D differ by at least 4%)."""
    while True:
        sizes = NormSizes(B=int(rng.integers(2, 4)), T=int(rng.integers(3, 8)), H=int(rng.integers(2, 5)),
                          d_k=int(rng.integers(2, 7)))
        values = [sizes.B, sizes.T, sizes.H, sizes.d_k, sizes.D, sizes.T + sizes.B + 1]  # the last: rows of (rows, D)
        if len(set(values)) == len(values) and sizes.D >= 6:
            return sizes


# ---- twins ------------------------------------------------------------------------------
def _layer(statistics, finish=lambda normalised, gamma, beta: normalised * gamma + beta):
    """layer_norm with ``(mean, spread) = statistics(x, eps)`` and the affine step ``finish``."""
    def make(module):
        def layer_norm(x, gamma, beta, eps=1e-5):
            mean, spread = statistics(x, eps)
            return finish((x - mean) / spread, gamma, beta)
        return layer_norm
    return make


def _over(axis):
    """The mean and the root of variance + eps over ``axis`` (None: every entry of x)."""
    def statistics(x, eps):
        return x.mean(axis=axis, keepdims=True), np.sqrt(x.var(axis=axis, keepdims=True) + eps)
    return statistics


def _features(spread):
    """The mean over the features, and the spread ``spread(variance, eps, x)``."""
    def statistics(x, eps):
        return x.mean(axis=-1, keepdims=True), spread(x.var(axis=-1, keepdims=True), eps, x)
    return statistics


def _scaled_first(module):
    def layer_norm(x, gamma, beta, eps=1e-5):
        scaled = x * gamma  # gamma applied to the raw features, before normalising
        centred = scaled - scaled.mean(axis=-1, keepdims=True)
        return centred / np.sqrt(centred.var(axis=-1, keepdims=True) + eps) + beta
    return layer_norm


def _in_place(module):
    def layer_norm(x, gamma, beta, eps=1e-5):
        x -= x.mean(axis=-1, keepdims=True)  # the caller's array: the block's residual stream is changed
        x /= np.sqrt(x.var(axis=-1, keepdims=True) + eps)
        return x * gamma + beta
    return layer_norm


def _rms(divisor):
    """rms_norm that divides by ``divisor(x, eps)``."""
    def make(module):
        def rms_norm(x, gamma, eps=1e-6):
            return x / divisor(x, eps) * gamma
        return rms_norm
    return make


def _block(combine):
    """pre_norm_block as ``combine(x, norm, sublayer)``, with norm the block's layer_norm and sublayer attention."""
    def make(module):
        def pre_norm_block(x, gamma, beta, W_qkv, W_o, n_heads):
            def norm(value):
                return module.layer_norm(value, gamma, beta)

            def sublayer(value):
                return module.self_attention(value, W_qkv, W_o, n_heads)
            return combine(x, norm, sublayer)
        return pre_norm_block
    return make


def _mean_square(x, axis=-1):
    return np.mean(x * x, axis=axis, keepdims=True)


TWINS: tuple[Twin, ...] = (
    Twin("norm-axis", "LayerNorm statistics over the first axis", "layer_norm", _layer(_over(0))),
    Twin("norm-axis", "LayerNorm statistics over the token axis", "layer_norm", _layer(_over(-2))),
    Twin("norm-axis", "LayerNorm statistics over the whole array", "layer_norm", _layer(_over(None))),
    Twin("norm-axis", "RMSNorm mean square over the first axis", "rms_norm",
         _rms(lambda x, eps: np.sqrt(_mean_square(x, 0) + eps))),
    Twin("norm-axis", "RMSNorm mean square over the token axis", "rms_norm",
         _rms(lambda x, eps: np.sqrt(_mean_square(x, -2) + eps))),
    Twin("norm-axis", "RMSNorm mean square over the whole array", "rms_norm",
         _rms(lambda x, eps: np.sqrt(np.mean(x * x) + eps))),
    Twin("norm-axis", "LayerNorm statistics without keepdims", "layer_norm",
         lambda module: lambda x, gamma, beta, eps=1e-5: (x - x.mean(axis=-1)) / np.sqrt(x.var(axis=-1) + eps) * gamma
         + beta),
    Twin("norm-axis", "RMSNorm mean square without keepdims", "rms_norm",
         lambda module: lambda x, gamma, eps=1e-6: x / np.sqrt(np.mean(x * x, axis=-1) + eps) * gamma),
    Twin("norm-epsilon", "LayerNorm divides by sqrt(var) + eps", "layer_norm",
         _layer(_features(lambda var, eps, x: np.sqrt(var) + eps))),
    Twin("norm-epsilon", "LayerNorm without eps", "layer_norm",
         _layer(_features(lambda var, eps, x: np.sqrt(var)))),
    Twin("norm-epsilon", "RMSNorm divides by sqrt(mean(x^2)) + eps", "rms_norm",
         _rms(lambda x, eps: np.sqrt(_mean_square(x)) + eps)),
    Twin("norm-epsilon", "RMSNorm without eps", "rms_norm", _rms(lambda x, eps: np.sqrt(_mean_square(x)))),
    Twin("norm-sample-variance", "LayerNorm variance divided by D - 1", "layer_norm",
         _layer(_features(lambda var, eps, x: np.sqrt(x.var(axis=-1, ddof=1, keepdims=True) + eps)))),
    Twin("norm-sample-variance", "RMSNorm mean square divided by D - 1", "rms_norm",
         _rms(lambda x, eps: np.sqrt(np.sum(x * x, axis=-1, keepdims=True) / (x.shape[-1] - 1) + eps))),
    Twin("norm-affine", "beta left out", "layer_norm",
         _layer(_over(-1), lambda normalised, gamma, beta: normalised * gamma)),
    Twin("norm-affine", "gamma and beta both left out", "layer_norm",
         _layer(_over(-1), lambda normalised, gamma, beta: normalised)),
    Twin("norm-affine", "shifted before scaling: (x_hat + beta) * gamma", "layer_norm",
         _layer(_over(-1), lambda normalised, gamma, beta: (normalised + beta) * gamma)),
    Twin("norm-affine", "gamma and beta swapped", "layer_norm",
         _layer(_over(-1), lambda normalised, gamma, beta: normalised * beta + gamma)),
    Twin("norm-affine", "gamma applied to x before normalising", "layer_norm", _scaled_first),
    Twin("norm-affine", "RMSNorm without gamma", "rms_norm",
         lambda module: lambda x, gamma, eps=1e-6: x / np.sqrt(_mean_square(x) + eps)),
    Twin("norm-rms-centred", "RMSNorm subtracts the mean first", "rms_norm",
         lambda module: lambda x, gamma, eps=1e-6: (x - x.mean(axis=-1, keepdims=True)) / np.sqrt(
             x.var(axis=-1, keepdims=True) + eps) * gamma),
    Twin("norm-rms-centred", "RMSNorm divides by the standard deviation", "rms_norm",
         _rms(lambda x, eps: np.sqrt(x.var(axis=-1, keepdims=True) + eps))),
    Twin("norm-rms-scale", "RMSNorm divides by the length, not the root mean square", "rms_norm",
         _rms(lambda x, eps: np.sqrt(np.sum(x * x, axis=-1, keepdims=True) + eps))),
    Twin("norm-rms-scale", "RMSNorm divides by the mean square, without the root", "rms_norm",
         _rms(lambda x, eps: _mean_square(x) + eps)),
    Twin("norm-in-place", "layer_norm writes into x, so the block adds the normalised input back", "layer_norm",
         _in_place),
    Twin("norm-post-norm", "post-norm: norm(x + sublayer(x))", "pre_norm_block",
         _block(lambda x, norm, sublayer: norm(x + sublayer(x)))),
    Twin("norm-post-norm", "normalised before and after: norm(x + sublayer(norm(x)))", "pre_norm_block",
         _block(lambda x, norm, sublayer: norm(x + sublayer(norm(x))))),
    Twin("norm-branch-output", "the sublayer's output normalised: x + norm(sublayer(x))", "pre_norm_block",
         _block(lambda x, norm, sublayer: x + norm(sublayer(x)))),
    Twin("norm-branch-output", "normalised on both sides of the sublayer: x + norm(sublayer(norm(x)))",
         "pre_norm_block", _block(lambda x, norm, sublayer: x + norm(sublayer(norm(x))))),
    Twin("norm-residual-source", "the normalised input added back: norm(x) + sublayer(norm(x))", "pre_norm_block",
         _block(lambda x, norm, sublayer: norm(x) + sublayer(norm(x)))),
    Twin("norm-residual-source", "no residual: sublayer(norm(x))", "pre_norm_block",
         _block(lambda x, norm, sublayer: sublayer(norm(x)))),
)

CALL_TEXT = {
    "layer_norm": "layer_norm(x, gamma, beta{keywords})",
    "rms_norm": "rms_norm(x, gamma{keywords})",
    "pre_norm_block": "pre_norm_block(x, gamma, beta, W_qkv, W_o, n_heads={heads})",
}
ARGUMENT_NAMES = {
    "layer_norm": ("x", "gamma", "beta"), "rms_norm": ("x", "gamma"),
    "pre_norm_block": ("x", "gamma", "beta", "W_qkv", "W_o", "n_heads"),
}


# ---- cases --------------------------------------------------------------------------------
def _case(name: str, prefix: str, function: str, args: tuple, kwargs: dict | None = None) -> Case:
    keywords = "".join(f", {key}={value:g}" for key, value in (kwargs or {}).items())  # e.g. ", eps=0.5"
    heads = args[-1] if function == "pre_norm_block" else None
    case = Case(id=f"{prefix}{name}", function=function, args=args, kwargs=kwargs or {},
                call_text=CALL_TEXT[function].format(keywords=keywords, heads=heads),
                legend="(B, T, D)" if args[0].ndim == 3 else "(T, D)",
                argument_names=ARGUMENT_NAMES[function], mutation_id="norm-in-place")
    return with_expectations(case, ASSIGNMENT, TWINS)


def _tokens(rng: np.random.Generator, *shape: int) -> np.ndarray:
    """Tokens whose means lie far from 0 and whose spreads lie far from 1, each its own."""
    means = rng.normal(0.0, 3.0, (*shape[:-1], 1))  # (..., 1)
    spreads = rng.uniform(0.3, 4.0, (*shape[:-1], 1))  # (..., 1)
    return means + spreads * floats(rng, *shape)  # (..., D)


def _weights(rng: np.random.Generator, D: int, score_scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """(W_qkv, W_o): (D, 3D) and (D, D); the query and key columns scaled by ``score_scale``."""
    W_qkv = floats(rng, D, 3 * D, scale=1.0 / np.sqrt(D))  # (D, 3D)
    W_qkv[:, :2 * D] *= score_scale
    return W_qkv, floats(rng, D, D, scale=1.0 / np.sqrt(D))


def _clear_winners(x, gamma, beta, W_qkv, n_heads) -> bool:
    """Every query row of the block's scores (over the keys it may see) has one clear largest score."""
    normed = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * gamma + beta
    B, T, D = x.shape
    q, k, _ = np.split(normed @ W_qkv, 3, axis=-1)  # each (B, T, D)
    q, k = (part.reshape(B, T, n_heads, D // n_heads).transpose(0, 2, 1, 3) for part in (q, k))  # (B, H, T, d_k)
    logits = q @ k.transpose(0, 1, 3, 2) / np.sqrt(D // n_heads)  # (B, H, T, T)
    for t in range(1, T):  # row 0 sees one key only
        top = np.sort(logits[:, :, t, :t + 1], axis=-1)  # (B, H, t + 1)
        if np.min(top[..., -1] - top[..., -2]) < CLEAR_GAP:
            return False
    return bool(np.max(np.abs(logits)) > 709.0)


def _large_score_inputs(rng: np.random.Generator, B: int, T: int, D: int, gamma, beta, n_heads: int) -> tuple:
    """Block inputs whose scores reach beyond 709, with no near ties (float32 rounding then cannot matter)."""
    score_scale = np.sqrt(LARGE_LOGIT / np.sqrt(D // n_heads))  # scores grow with the square of the scale
    for _ in range(200):
        x = _tokens(rng, B, T, D)
        W_qkv, W_o = _weights(rng, D, score_scale)
        if _clear_winners(x, gamma, beta, W_qkv, n_heads):
            return x, gamma, beta, W_qkv, W_o, n_heads
    raise RuntimeError("no large-score block inputs without near ties were drawn")  # a guard: never seen


def build_cases(rng: np.random.Generator, sizes: NormSizes, prefix: str) -> dict[str, Case]:
    """Every case of the normalisation exercise for these sizes, keyed by name."""
    B, T, D, H = sizes.B, sizes.T, sizes.D, sizes.H
    gamma = rng.uniform(0.5, 2.0, D) * rng.choice([-1.0, 1.0], D, p=[0.2, 0.8])  # (D,): a sign flip or two
    beta = floats(rng, D)  # (D,)
    rows = T + B + 1  # a length of its own for the tokens without batch axis
    x, W_qkv, W_o = _tokens(rng, B, T, D), *_weights(rng, D)
    nearly_constant = rng.normal(0.0, 2.0, (B, T, 1)) + 1e-3 * floats(rng, B, T, D)  # variance near 1e-6 < eps
    specs = [
        ("layer/tokens", "layer_norm", (_tokens(rng, B, T, D), gamma, beta), None),
        ("layer/no-batch", "layer_norm", (_tokens(rng, rows, D), gamma, beta), None),
        ("layer/nearly-constant", "layer_norm", (nearly_constant, gamma, beta), None),
        ("layer/large-eps", "layer_norm", (_tokens(rng, B, T, D), gamma, beta), {"eps": 0.5}),
        ("rms/tokens", "rms_norm", (_tokens(rng, B, T, D), gamma), None),
        ("rms/no-batch", "rms_norm", (_tokens(rng, rows, D), gamma), None),
        ("rms/tiny", "rms_norm", (1e-3 * floats(rng, B, T, D), gamma), None),  # mean square near eps
        ("rms/large-eps", "rms_norm", (_tokens(rng, B, T, D), gamma), {"eps": 0.25}),
        ("block/tokens", "pre_norm_block", (x, gamma, beta, W_qkv, W_o, H), None),
        ("block/other-heads", "pre_norm_block", (_tokens(rng, B, T, D), gamma, beta, W_qkv, W_o, sizes.d_k), None),
        ("block/large-logits", "pre_norm_block", _large_score_inputs(rng, B, T, D, gamma, beta, H), None),
    ]
    return {name: _case(name, prefix, function, args, kwargs) for name, function, args, kwargs in specs}


CASES = CaseSets(build_cases, PUBLIC_SEED, public_sizes=PUBLIC_SIZES, draw=draw_sizes)
public_cases, hidden_cases = CASES.public, CASES.hidden
