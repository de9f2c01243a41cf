# expect: softmax-unstable, combine-heads-wrong-order
# Two mistakes: math.exp is applied to the raw logits (OverflowError or 0/0 on large ones), and combine_heads stacks the heads on a new last axis, interleaving their features.
"""Multi-head attention with math.exp lifted to arrays by np.frompyfunc, and heads cut with np.dsplit and glued
back with np.dstack (both work on the third axis, the features of a (B, T, D) array)."""

import math

import numpy as np

_exp = np.frompyfunc(math.exp, 1, 1)  # object-dtype results, cast back to float below


def softmax(x):
    x = np.asarray(x)
    e = _exp(x).astype(float)
    return e / e.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    scores = Q @ np.swapaxes(K, -2, -1) / math.sqrt(d_k)  # (B, H, T, S)
    weights = softmax(scores)
    return weights @ V, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("num_heads must divide d_model, got %r and %r" % (num_heads, d_model))
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        s = 1.0 / math.sqrt(d_model)
        self.W_Q = rng.normal(0.0, s, (d_model, d_model))
        self.W_K = rng.normal(0.0, s, (d_model, d_model))
        self.W_V = rng.normal(0.0, s, (d_model, d_model))
        self.W_O = rng.normal(0.0, s, (d_model, d_model))

    def split_heads(self, x):
        pieces = np.dsplit(x, self.num_heads)  # H arrays (B, T, d_k), in feature order
        return np.stack(pieces, axis=1)  # (B, H, T, d_k)

    def combine_heads(self, x):
        heads = [x[:, h] for h in range(x.shape[1])]  # H arrays (B, T, d_k)
        stacked = np.stack(heads, axis=-1)  # (B, T, d_k, H)
        return stacked.reshape(x.shape[0], x.shape[2], -1)  # (B, T, D)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(heads) @ self.W_O
        if return_weights:
            return out, weights
        return out
