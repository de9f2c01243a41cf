# expect: attention-no-scale
# The exponent 1 // 2 is integer division: the scores are divided by d_k ** 0 = 1.
"""Multi-head attention as typed library code: projections contract with np.tensordot, products go into buffers allocated once per call."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]


def softmax(x: Array) -> Array:
    """Stable softmax over the last axis, computed in a fresh buffer."""
    x = np.asarray(x, dtype=np.float64)
    peak = np.max(x, axis=-1, keepdims=True)  # (..., 1)
    buffer = np.empty_like(x)
    np.subtract(x, peak, out=buffer)
    np.exp(buffer, out=buffer)
    total = np.sum(buffer, axis=-1, keepdims=True)  # (..., 1)
    np.divide(buffer, total, out=buffer)
    return buffer


def scaled_dot_product_attention(Q: Array, K: Array, V: Array) -> tuple[Array, Array]:
    *lead, length_q, d_k = Q.shape
    length_k = K.shape[-2]
    scores = np.empty((*lead, length_q, length_k))
    np.matmul(Q, np.swapaxes(K, -1, -2), out=scores)  # (B, H, T, S)
    scores /= d_k ** (1 // 2)
    weights = softmax(scores)
    context = np.empty((*lead, length_q, V.shape[-1]))
    np.matmul(weights, V, out=context)  # (B, H, T, d_k)
    return context, weights


class MultiHeadAttention:
    def __init__(self, d_model: int = 8, num_heads: int = 2) -> None:
        if d_model % num_heads:
            raise ValueError(f"num_heads={num_heads} must divide d_model={d_model}")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, scale, (d_model, d_model))
        self.W_K = rng.normal(0.0, scale, (d_model, d_model))
        self.W_V = rng.normal(0.0, scale, (d_model, d_model))
        self.W_O = rng.normal(0.0, scale, (d_model, d_model))

    @staticmethod
    def _project(x: Array, weight: Array) -> Array:
        return np.tensordot(x, weight, axes=([-1], [0]))  # (B, L, D)

    def split_heads(self, x: Array) -> Array:
        batch, length, _ = x.shape
        grouped = x.reshape(batch, length, self.num_heads, self.d_k)  # (B, L, H, d_k)
        return np.ascontiguousarray(grouped.transpose(0, 2, 1, 3))  # (B, H, L, d_k)

    def combine_heads(self, x: Array) -> Array:
        batch, heads, length, width = x.shape
        return x.transpose(0, 2, 1, 3).reshape(batch, length, heads * width)  # (B, L, D)

    def forward(self, Q: Array, K: Array, V: Array, return_weights: bool = False):
        queries = self.split_heads(self._project(Q, self.W_Q))
        keys = self.split_heads(self._project(K, self.W_K))
        values = self.split_heads(self._project(V, self.W_V))
        context, weights = scaled_dot_product_attention(queries, keys, values)
        out = self._project(self.combine_heads(context), self.W_O)
        if return_weights:
            return out, weights
        return out
