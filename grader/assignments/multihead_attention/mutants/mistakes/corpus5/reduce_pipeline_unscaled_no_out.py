# expect: attention-no-scale, mha-no-output-projection
# Two mistakes: scaled_dot_product_attention never divides Q K^T by sqrt(d_k), and forward's pipeline ends at combine_heads, so W_O is never applied.
"""Multi-head attention as a few pipelines: every step is a function and
functools.reduce threads the array through them."""

from functools import reduce

import numpy as np


def pipe(x, *steps):
    """pipe(x, f, g, h) == h(g(f(x)))."""
    return reduce(lambda acc, step: step(acc), steps, x)


def softmax(x):
    """Stable softmax on the last axis."""
    return pipe(
        x - np.max(x, axis=-1, keepdims=True),
        np.exp,
        lambda e: e / np.sum(e, axis=-1, keepdims=True),
    )


def scaled_dot_product_attention(Q, K, V):
    """(B, H, T, d_k), (B, H, S, d_k), (B, H, S, d_k) -> out, weights."""
    scores = reduce(np.matmul, [Q, np.swapaxes(K, -1, -2)])   # (B, H, T, S)
    weights = softmax(scores)
    out = reduce(np.matmul, [weights, V])                      # (B, H, T, d_k)
    return out, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("num_heads must divide d_model evenly")
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
        B, T, _ = x.shape
        return pipe(
            x,
            lambda a: a.reshape(B, T, self.num_heads, self.d_k),
            lambda a: a.transpose(0, 2, 1, 3),
        )

    def combine_heads(self, x):
        B, H, T, d_k = x.shape
        return pipe(
            x,
            lambda a: a.transpose(0, 2, 1, 3),
            lambda a: a.reshape(B, T, H * d_k),
        )

    def forward(self, Q, K, V, return_weights=False):
        q = pipe(Q, lambda a: a @ self.W_Q, self.split_heads)
        k = pipe(K, lambda a: a @ self.W_K, self.split_heads)
        v = pipe(V, lambda a: a @ self.W_V, self.split_heads)
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = pipe(heads, self.combine_heads)
        if return_weights:
            return out, weights
        return out
