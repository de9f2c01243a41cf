# expect: attention-softmax-wrong-axis, attention-scale-after-softmax
# Two mistakes in one line: the softmax runs over the queries, and the scale is applied to its result.
"""Multi-head attention with a frozen layout record and einsum contractions whose order is planned once."""

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class HeadLayout:
    batch: int
    length: int
    heads: int
    width: int

    @classmethod
    def of(cls, x, heads):
        batch, length, features = x.shape
        return cls(batch, length, heads, features // heads)


def softmax(x):
    e = np.exp(x - np.max(x, -1, keepdims=True))
    return e / np.sum(e, -1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    scores = np.einsum("bhtd,bhsd->bhst", Q, K, optimize=True)  # (B, H, S, T)
    weights = np.einsum("bhst->bhts", softmax(scores)) / np.sqrt(d_k)
    out = np.einsum("bhts,bhsd->bhtd", weights, V, optimize=True)  # (B, H, T, d_k)
    return out, weights


def _linear(x, weight):
    path, _ = np.einsum_path("btd,de->bte", x, weight, optimize="optimal")
    return np.einsum("btd,de->bte", x, weight, optimize=path)  # (B, T, D)


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads:
            raise ValueError(f"d_model ({d_model}) must split evenly over num_heads ({num_heads})")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, scale, (d_model, d_model))
        self.W_K = rng.normal(0.0, scale, (d_model, d_model))
        self.W_V = rng.normal(0.0, scale, (d_model, d_model))
        self.W_O = rng.normal(0.0, scale, (d_model, d_model))

    def split_heads(self, x):
        layout = HeadLayout.of(x, self.num_heads)
        grouped = x.reshape(layout.batch, layout.length, layout.heads, layout.width)  # (B, T, H, d_k)
        return np.einsum("bthd->bhtd", grouped)

    def combine_heads(self, x):
        batch, heads, length, width = x.shape
        return np.einsum("bhtd->bthd", x).reshape(batch, length, heads * width)  # (B, T, D)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(_linear(Q, self.W_Q))
        k = self.split_heads(_linear(K, self.W_K))
        v = self.split_heads(_linear(V, self.W_V))
        context, weights = scaled_dot_product_attention(q, k, v)
        out = _linear(self.combine_heads(context), self.W_O)
        if return_weights:
            return out, weights
        return out
