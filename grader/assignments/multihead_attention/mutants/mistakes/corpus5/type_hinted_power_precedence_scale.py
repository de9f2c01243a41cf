# expect: attention-wrong-scale
# Mistake in scaled_dot_product_attention: `scores / d_k ** 1/2` parses as (scores / d_k) / 2, so the scores are divided by 2*d_k rather than sqrt(d_k).
"""Multi-head self/cross attention (NumPy)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.floating]


def softmax(x: Array) -> Array:
    """Numerically stable softmax over the last axis."""
    x = np.asarray(x)
    row_max = x.max(axis=-1, keepdims=True)
    exps = np.exp(x - row_max)
    return exps / exps.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q: Array, K: Array, V: Array) -> tuple[Array, Array]:
    """softmax(Q K^T / sqrt(d_k)) V, per batch entry and head."""
    assert Q.ndim == K.ndim == V.ndim == 4, "expected (B, H, len, d_k) inputs"
    assert K.shape[-2] == V.shape[-2], "keys and values must have the same length"
    d_k: int = Q.shape[-1]
    scores: Array = Q @ K.swapaxes(-1, -2) / d_k ** 1/2      # (B, H, T, S)
    weights: Array = softmax(scores)
    out: Array = weights @ V                                  # (B, H, T, d_k)
    return out, weights


class MultiHeadAttention:
    W_Q: Array
    W_K: Array
    W_V: Array
    W_O: Array

    def __init__(self, d_model: int = 8, num_heads: int = 2) -> None:
        if d_model % num_heads != 0:
            raise ValueError(f"d_model ({d_model}) % num_heads ({num_heads}) != 0")
        self.d_model: int = d_model
        self.num_heads: int = num_heads
        self.d_k: int = d_model // num_heads
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, scale, (d_model, d_model))
        self.W_K = rng.normal(0.0, scale, (d_model, d_model))
        self.W_V = rng.normal(0.0, scale, (d_model, d_model))
        self.W_O = rng.normal(0.0, scale, (d_model, d_model))

    def split_heads(self, x: Array) -> Array:
        batch, seq_len, _ = x.shape
        return x.reshape(batch, seq_len, self.num_heads, self.d_k).swapaxes(1, 2)

    def combine_heads(self, x: Array) -> Array:
        batch, _, seq_len, _ = x.shape
        return x.swapaxes(1, 2).reshape(batch, seq_len, self.d_model)

    def forward(self, Q: Array, K: Array, V: Array, return_weights: bool = False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        context, weights = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(context) @ self.W_O
        if return_weights:
            return out, weights
        return out
