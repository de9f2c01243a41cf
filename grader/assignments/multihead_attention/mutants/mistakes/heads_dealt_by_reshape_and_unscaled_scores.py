# expect: split-heads-no-transpose, attention-no-scale
# Two mistakes on one path: split_heads reshapes (B, T, D) straight into (B, H, T, d_k) with no
# transpose, so each "head" holds pieces of several positions; and the scores are never scaled.
"""Shapes kept in a small named tuple, products with np.linalg.matmul, the heads made by one
np.reshape call."""

from typing import NamedTuple

import numpy as np


class Shape(NamedTuple):
    batch: int
    length: int
    width: int


def softmax(x):
    shifted = x - np.amax(x, axis=-1, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    logits = np.linalg.matmul(Q, np.swapaxes(K, -2, -1))
    weights = softmax(logits)
    return np.linalg.matmul(weights, V), weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("num_heads must divide d_model")
        self.d_model, self.num_heads = d_model, num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, scale, (d_model, d_model))
        self.W_K = rng.normal(0.0, scale, (d_model, d_model))
        self.W_V = rng.normal(0.0, scale, (d_model, d_model))
        self.W_O = rng.normal(0.0, scale, (d_model, d_model))

    def split_heads(self, x):
        s = Shape(*x.shape)
        return np.reshape(x, (s.batch, self.num_heads, s.length, self.d_k))

    def combine_heads(self, x):
        b, h, t, d = x.shape
        return np.swapaxes(x, 1, 2).reshape(b, t, h * d)

    def forward(self, Q, K, V, return_weights=False):
        parts = [self.split_heads(np.linalg.matmul(x, W)) for x, W in ((Q, self.W_Q), (K, self.W_K), (V, self.W_V))]
        heads, weights = scaled_dot_product_attention(*parts)
        out = np.linalg.matmul(self.combine_heads(heads), self.W_O)
        return (out, weights) if return_weights else out
