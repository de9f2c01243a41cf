# expect: split-heads-interleaved, combine-heads-wrong-order
# Two mistakes: the head-to-column table is built as arange(D).reshape(d_k, H).T, so head h owns columns h, h+H, ...; split_heads gathers with it and combine_heads scatters back with it.
"""Multi-head attention driven by an explicit table of feature columns per head.

A helper returns an (H, d_k) integer table whose row h lists the columns of head
h. split_heads gathers with fancy indexing through the table; combine_heads
writes every head back into its columns of a preallocated output.
"""

import numpy as np


def head_columns(d_model, num_heads):
    """(H, d_k) table of feature indices, one row per head."""
    d_k = d_model // num_heads
    return np.arange(d_model).reshape(d_k, num_heads).T


def softmax(x):
    shifted = x - x.max(axis=-1, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    scores = Q @ K.transpose(0, 1, 3, 2) / np.sqrt(d_k)  # (B, H, T, S)
    weights = softmax(scores)
    return weights @ V, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError(f"d_model ({d_model}) must be divisible by num_heads ({num_heads})")
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
        table = head_columns(x.shape[-1], self.num_heads)  # (H, d_k)
        gathered = x[..., table]  # (B, T, H, d_k)
        return gathered.transpose(0, 2, 1, 3)  # (B, H, T, d_k)

    def combine_heads(self, x):
        b, h, t, d_k = x.shape
        table = head_columns(h * d_k, h)  # (H, d_k)
        out = np.empty((b, t, h * d_k), dtype=x.dtype)
        for i in range(h):
            out[..., table[i]] = x[:, i]  # (B, T, d_k) into head i's columns
        return out

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(heads) @ self.W_O
        return (out, weights) if return_weights else out
