# expect: correct
# Type hints, module-level helpers shared by the class, a dataclass-free config
# kept as attributes; swapaxes in both directions and an explicit d_head.
from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]


def softmax(x: Array) -> Array:
    shifted = x - np.max(x, axis=-1, keepdims=True)
    numerator = np.exp(shifted)
    denominator = np.sum(numerator, axis=-1, keepdims=True)
    return numerator / denominator


def scaled_dot_product_attention(Q: Array, K: Array, V: Array) -> tuple[Array, Array]:
    d_head = Q.shape[-1]
    logits = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_head)
    attn = softmax(logits)
    return attn @ V, attn


def _to_heads(x: Array, n_heads: int) -> Array:
    batch, length, width = x.shape
    return np.swapaxes(x.reshape(batch, length, n_heads, width // n_heads), 1, 2)


def _from_heads(x: Array) -> Array:
    batch, n_heads, length, d_head = x.shape
    return np.swapaxes(x, 1, 2).reshape(batch, length, n_heads * d_head)


class MultiHeadAttention:
    def __init__(self, d_model: int = 8, num_heads: int = 2) -> None:
        if num_heads <= 0 or d_model % num_heads != 0:
            raise ValueError(f"d_model ({d_model}) must be a positive multiple of num_heads ({num_heads})")
        self.d_model, self.num_heads = d_model, num_heads

    def split_heads(self, x: Array) -> Array:
        return _to_heads(x, self.num_heads)

    def combine_heads(self, x: Array) -> Array:
        return _from_heads(x)

    def forward(self, Q: Array, K: Array, V: Array, return_weights: bool = False):
        q, k, v = (self.split_heads(t @ w) for t, w in zip((Q, K, V), (self.W_Q, self.W_K, self.W_V)))
        ctx, attn = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(ctx) @ self.W_O
        return (out, attn) if return_weights else out
