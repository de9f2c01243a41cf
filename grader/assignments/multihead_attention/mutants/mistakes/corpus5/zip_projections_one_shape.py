# expect: mha-kv-uses-query-length
# forward reshapes all three projections with one (B, T, H, d_k) shape taken from the queries, so keys/values of a different length S cannot be split
"""Compact forward: the three projections are handled in one ``zip`` loop.

The head split is written inline in ``forward`` (one shape tuple, one
transpose) so the three inputs go through the same code path.
"""

import numpy as np


def softmax(x):
    x = np.asarray(x)
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    scores = Q @ K.swapaxes(-1, -2) / np.sqrt(Q.shape[-1])
    w = softmax(scores)
    return w @ V, w


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
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
        return x.reshape(B, T, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        B, H, T, dk = x.shape
        return x.transpose(0, 2, 1, 3).reshape(B, T, H * dk)

    def forward(self, Q, K, V, return_weights=False):
        batch, seq_len, _ = Q.shape
        head_shape = (batch, seq_len, self.num_heads, self.d_k)
        q, k, v = (
            (inp @ W).reshape(head_shape).transpose(0, 2, 1, 3)
            for inp, W in zip((Q, K, V), (self.W_Q, self.W_K, self.W_V))
        )
        ctx, w = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(ctx) @ self.W_O
        if return_weights:
            return out, w
        return out
