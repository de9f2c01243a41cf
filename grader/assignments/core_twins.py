"""Buggy twins: what each catalogued mistake computes, side by side.

Each twin replaces one part of the reference pipeline (``softmax``,
``attention``, ``split``, ``combine`` or the whole ``forward``) with the
mistaken version. Diagnosis runs the pipeline with one twin swapped in on the
very input a student's code received and compares outputs, so a mistake in
``split_heads`` is recognized from ``forward``'s output too (its root cause).
Mutation and constructor mistakes are seen by the checks directly; they have
no output twin here.

Instructor-side only: a student release ships precomputed twin outputs for
the public fixtures instead of this module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

# part -> the student-facing function it stands for
PART_FUNCTION = {
    "softmax": "softmax",
    "attention": "scaled_dot_product_attention",
    "split": "split_heads",
    "combine": "combine_heads",
    "forward": "forward",
}
# which parts each graded function depends on (itself included)
DEPENDS_ON = {
    "softmax": ("softmax",),
    "scaled_dot_product_attention": ("attention", "softmax"),
    "split_heads": ("split",),
    "combine_heads": ("combine",),
    "forward": ("forward", "split", "attention", "softmax", "combine"),
}


@dataclass(frozen=True)
class Twin:
    misconception: str
    part: str
    label: str
    run: Callable


def _softmax(x, axis=-1):
    shifted = x - np.max(x, axis=axis, keepdims=True)
    exponentials = np.exp(shifted)
    return exponentials / np.sum(exponentials, axis=axis, keepdims=True)


def _quiet(function):
    def run(*args, **kwargs):
        with np.errstate(all="ignore"):
            return function(*args, **kwargs)
    return run


# ---- softmax twins --------------------------------------------------------------------
def softmax_unstable(x):
    exponentials = np.exp(x)
    return exponentials / exponentials.sum(axis=-1, keepdims=True)


def softmax_global_max(x):
    exponentials = np.exp(x - np.max(x))
    return exponentials / exponentials.sum(axis=-1, keepdims=True)


def softmax_axis(axis):
    return lambda x: _softmax(x, axis=axis) if x.ndim > 1 or axis in (-1, 0, None) else _softmax(x)


def softmax_whole_array(x):
    exponentials = np.exp(x - np.max(x))
    return exponentials / exponentials.sum()


def softmax_whole_array_unshifted(x):
    exponentials = np.exp(x)
    return exponentials / exponentials.sum()


def softmax_no_keepdims_max(x):
    exponentials = np.exp(x - np.max(x, axis=-1))
    return exponentials / exponentials.sum(axis=-1, keepdims=True)


def softmax_no_keepdims_sum(x):
    exponentials = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return exponentials / exponentials.sum(axis=-1)


def softmax_no_keepdims_both(x):
    exponentials = np.exp(x - np.max(x, axis=-1))
    return exponentials / exponentials.sum(axis=-1)


# ---- attention twins (softmax is passed in so softmax twins compose) -------------------
def _attention(Q, K, V, softmax, *, scale=None, keys=None, value_product=None, return_scores=False, axis=-1):
    d_k = Q.shape[-1]
    keys_t = np.swapaxes(K, -1, -2) if keys is None else keys(K)
    scores = Q @ keys_t
    scores = scores / np.sqrt(d_k) if scale is None else scale(scores, Q, K)
    weights = softmax(scores) if axis == -1 else _softmax(scores, axis=axis)
    out = weights @ V if value_product is None else value_product(weights, Q, K, V)
    return out, (scores if return_scores else weights)


def attention_with(**options):
    return lambda Q, K, V, softmax: _attention(Q, K, V, softmax, **options)


def _scaled_after_softmax(Q, K, V, softmax):
    weights = softmax(Q @ np.swapaxes(K, -1, -2)) / np.sqrt(Q.shape[-1])
    return weights @ V, weights


def reference_attention(Q, K, V, softmax):
    return _attention(Q, K, V, softmax)


# ---- split / combine twins ----------------------------------------------------------------
def split_reference(x, heads):
    batch, length, width = x.shape
    return x.reshape(batch, length, heads, width // heads).transpose(0, 2, 1, 3)


def split_no_transpose(x, heads):
    batch, length, width = x.shape
    return x.reshape(batch, heads, length, width // heads)


def split_interleaved(x, heads):
    batch, length, width = x.shape
    return x.reshape(batch, length, width // heads, heads).transpose(0, 3, 1, 2)


def split_axes(order):
    def split(x, heads):
        batch, length, width = x.shape
        return x.reshape(batch, length, heads, width // heads).transpose(order)
    return split


def combine_reference(x):
    batch, heads, length, d_k = x.shape
    return x.transpose(0, 2, 1, 3).reshape(batch, length, heads * d_k)


def combine_no_transpose(x):
    batch, heads, length, d_k = x.shape
    return x.reshape(batch, length, heads * d_k)


def combine_reversed(x):
    return combine_reference(x[:, ::-1])


def combine_interleaved(x):
    batch, heads, length, d_k = x.shape
    return x.transpose(0, 2, 3, 1).reshape(batch, length, heads * d_k)


# ---- the forward pipeline ------------------------------------------------------------------
@dataclass(frozen=True)
class Parts:
    softmax: Callable = _softmax
    attention: Callable = reference_attention
    split: Callable = split_reference
    combine: Callable = combine_reference


def _right_product(x, W):
    return x @ W


def forward_pipeline(Q, K, V, weights, heads, parts=Parts(), return_weights=False, *,
                     project=_right_product, project_output=None, use_output=True, key_value_from_query=False,
                     returned=None):
    W_Q, W_K, W_V, W_O = (weights[name] for name in ("W_Q", "W_K", "W_V", "W_O"))
    if key_value_from_query:
        K = V = Q
    queries = parts.split(project(Q, W_Q), heads)  # (B, H, T, d_k)
    keys = parts.split(project(K, W_K), heads)  # (B, H, S, d_k)
    values = parts.split(project(V, W_V), heads)  # (B, H, S, d_k)
    heads_out, attention_weights = parts.attention(queries, keys, values, parts.softmax)
    out = parts.combine(heads_out)  # (B, T, D)
    if use_output:
        out = (project_output or project)(out, W_O)
    if returned is not None:
        return returned(out, attention_weights, return_weights)
    return (out, attention_weights) if return_weights else out


def forward_with(**options):
    return lambda Q, K, V, weights, heads, parts, return_weights: forward_pipeline(
        Q, K, V, weights, heads, parts, return_weights, **options)


def _swap_weights(mapping):
    def run(Q, K, V, weights, heads, parts, return_weights):
        swapped = {name: weights[mapping.get(name, name)] for name in weights}
        return forward_pipeline(Q, K, V, swapped, heads, parts, return_weights)
    return run


def _average_heads(out, weights, return_weights):
    return (out, weights.mean(axis=1)) if return_weights else out


def _always_tuple(out, weights, return_weights):
    return out, weights


def _only_out(out, weights, return_weights):
    return out


def _swapped_order(out, weights, return_weights):
    return (weights, out) if return_weights else out


TWINS: tuple[Twin, ...] = (
    Twin("softmax-unstable", "softmax", "exp without subtracting the max", softmax_unstable),
    Twin("softmax-global-max", "softmax", "subtracts the global max", softmax_global_max),
    Twin("softmax-wrong-axis", "softmax", "normalizes over axis 0", softmax_axis(0)),
    Twin("softmax-wrong-axis", "softmax", "normalizes over axis -2", softmax_axis(-2)),
    Twin("softmax-wrong-axis", "softmax", "normalizes over axis 1", softmax_axis(1)),
    Twin("softmax-wrong-axis", "softmax", "normalizes over the whole array", softmax_whole_array),
    Twin("softmax-wrong-axis", "softmax", "normalizes over the whole array, unshifted", softmax_whole_array_unshifted),
    Twin("softmax-no-keepdims", "softmax", "row max without keepdims", softmax_no_keepdims_max),
    Twin("softmax-no-keepdims", "softmax", "row sum without keepdims", softmax_no_keepdims_sum),
    Twin("softmax-no-keepdims", "softmax", "max and sum without keepdims", softmax_no_keepdims_both),
    Twin("attention-no-scale", "attention", "no scaling", attention_with(scale=lambda s, Q, K: s)),
    Twin("attention-wrong-scale", "attention", "divides by d_k", attention_with(scale=lambda s, Q, K: s / Q.shape[-1])),
    Twin("attention-wrong-scale", "attention", "multiplies by sqrt(d_k)",
         attention_with(scale=lambda s, Q, K: s * np.sqrt(Q.shape[-1]))),
    Twin("attention-wrong-scale", "attention", "divides by sqrt(D)",
         attention_with(scale=lambda s, Q, K: s / np.sqrt(Q.shape[-1] * Q.shape[1]))),
    Twin("attention-wrong-scale", "attention", "divides by sqrt(S)", attention_with(scale=lambda s, Q, K: s / np.sqrt(K.shape[-2]))),
    Twin("attention-wrong-scale", "attention", "divides by sqrt(T)", attention_with(scale=lambda s, Q, K: s / np.sqrt(Q.shape[-2]))),
    Twin("attention-wrong-scale", "attention", "divides by sqrt(H)", attention_with(scale=lambda s, Q, K: s / np.sqrt(Q.shape[1]))),
    Twin("attention-wrong-scale", "attention", "scales the weights after the softmax",
         lambda Q, K, V, softmax: _scaled_after_softmax(Q, K, V, softmax)),
    Twin("attention-wrong-transpose", "attention", "K.T on 4-D", attention_with(keys=lambda K: K.T)),
    Twin("attention-wrong-transpose", "attention", "swaps axes 1 and 2 of K", attention_with(keys=lambda K: K.transpose(0, 2, 1, 3))),
    Twin("attention-wrong-transpose", "attention", "swaps heads and width of K", attention_with(keys=lambda K: K.transpose(0, 3, 2, 1))),
    Twin("attention-wrong-transpose", "attention", "no transpose of K", attention_with(keys=lambda K: K)),
    Twin("attention-softmax-wrong-axis", "attention", "softmax over the queries", attention_with(axis=-2)),
    Twin("attention-softmax-wrong-axis", "attention", "softmax over the heads", attention_with(axis=1)),
    Twin("attention-softmax-wrong-axis", "attention", "softmax over the batch", attention_with(axis=0)),
    Twin("attention-returns-scores", "attention", "returns the scaled scores", attention_with(return_scores=True)),
    Twin("attention-returns-scores", "attention", "returns the unscaled scores",
         lambda Q, K, V, softmax: (_attention(Q, K, V, softmax)[0], Q @ np.swapaxes(K, -1, -2))),
    Twin("attention-wrong-value-product", "attention", "weights @ K", attention_with(value_product=lambda w, Q, K, V: w @ K)),
    Twin("attention-wrong-value-product", "attention", "transposed weights @ V",
         attention_with(value_product=lambda w, Q, K, V: np.swapaxes(w, -1, -2) @ V)),
    Twin("attention-wrong-value-product", "attention", "V @ weights", attention_with(value_product=lambda w, Q, K, V: V @ w)),
    Twin("attention-wrong-value-product", "attention", "weights @ V^T",
         attention_with(value_product=lambda w, Q, K, V: w @ np.swapaxes(V, -1, -2))),
    Twin("attention-wrong-value-product", "attention", "weights times V elementwise",
         attention_with(value_product=lambda w, Q, K, V: w * V)),
    Twin("split-heads-no-transpose", "split", "reshape straight to (B, H, T, d_k)", split_no_transpose),
    Twin("split-heads-interleaved", "split", "round-robin features", split_interleaved),
    *(Twin("split-heads-wrong-axes", "split", f"transpose{order}", split_axes(order))
      for order in ((0, 1, 2, 3), (0, 2, 3, 1), (0, 3, 1, 2), (1, 2, 0, 3), (2, 0, 1, 3), (0, 1, 3, 2), (2, 1, 0, 3), (1, 0, 2, 3))),
    Twin("combine-heads-no-transpose", "combine", "reshape straight to (B, T, D)", combine_no_transpose),
    Twin("combine-heads-wrong-order", "combine", "heads in reverse order", combine_reversed),
    Twin("combine-heads-wrong-order", "combine", "heads interleaved", combine_interleaved),
    Twin("mha-no-output-projection", "forward", "no W_O", forward_with(use_output=False)),
    Twin("mha-wrong-projection", "forward", "x @ W.T", forward_with(project=lambda x, W: x @ W.T)),
    Twin("mha-wrong-projection", "forward", "x @ W.T for Q, K and V",
         forward_with(project=lambda x, W: x @ W.T, project_output=_right_product)),
    Twin("mha-wrong-projection", "forward", "x @ W_O.T at the output", forward_with(project_output=lambda x, W: x @ W.T)),
    Twin("mha-wrong-projection", "forward", "W @ x", forward_with(project=lambda x, W: W @ x)),
    Twin("mha-wrong-projection", "forward", "W_Q for every input", _swap_weights({"W_K": "W_Q", "W_V": "W_Q"})),
    Twin("mha-wrong-projection", "forward", "W_Q and W_K swapped", _swap_weights({"W_Q": "W_K", "W_K": "W_Q"})),
    Twin("mha-wrong-projection", "forward", "W_K and W_V swapped", _swap_weights({"W_K": "W_V", "W_V": "W_K"})),
    Twin("mha-wrong-projection", "forward", "W_K for the values", _swap_weights({"W_V": "W_K"})),
    Twin("mha-wrong-projection", "forward", "W_Q and W_V swapped", _swap_weights({"W_Q": "W_V", "W_V": "W_Q"})),
    Twin("mha-ignores-key-value", "forward", "keys and values from the query input", forward_with(key_value_from_query=True)),
    Twin("mha-wrong-weights-returned", "forward", "weights averaged over heads", forward_with(returned=_average_heads)),
    Twin("mha-wrong-weights-returned", "forward", "always returns a tuple", forward_with(returned=_always_tuple)),
    Twin("mha-wrong-weights-returned", "forward", "ignores return_weights", forward_with(returned=_only_out)),
    Twin("mha-wrong-weights-returned", "forward", "returns (weights, out)", forward_with(returned=_swapped_order)),
)


def twins_for(function: str) -> tuple[Twin, ...]:
    """The twins whose mistake can show in ``function``'s output."""
    parts = DEPENDS_ON.get(function, ())
    return tuple(twin for twin in TWINS if twin.part in parts)


def run_twin(twin: Twin, function: str, args: tuple, kwargs: dict, *, heads: int | None = None,
             weights: dict | None = None):
    """What ``function`` returns on ``args`` when ``twin``'s mistake is made.

    Returns the value, or an ``Exception`` instance when the mistake raises.
    """
    parts = Parts(**{twin.part: twin.run}) if twin.part != "forward" else Parts()
    run = _quiet(_graded_call)
    try:
        if twin.part == "forward":
            Q, K, V = args
            with np.errstate(all="ignore"):
                return twin.run(Q, K, V, weights, heads, parts, kwargs.get("return_weights", False))
        return run(function, parts, args, kwargs, heads, weights)
    except Exception as error:  # the mistake may raise, e.g. a shape error in matmul
        return error


def reference_call(function: str, args: tuple, kwargs: dict, *, heads: int | None = None,
                   weights: dict | None = None):
    """The correct value of ``function`` on ``args`` (the pipeline with no twin)."""
    return _graded_call(function, Parts(), args, kwargs, heads, weights)


def _graded_call(function, parts, args, kwargs, heads, weights):
    if function == "softmax":
        return parts.softmax(*args)
    if function == "scaled_dot_product_attention":
        return parts.attention(*args, parts.softmax)
    if function == "split_heads":
        return parts.split(args[0], heads)
    if function == "combine_heads":
        return parts.combine(args[0])
    if function == "forward":
        Q, K, V = args
        return forward_pipeline(Q, K, V, weights, heads, parts, kwargs.get("return_weights", False))
    raise KeyError(function)
