# expect: combine-heads-wrong-order
# combine_heads scatters with np.put using positions laid out as (B, T, d_k, H), so slot j of head h lands in column j*H + h instead of h*d_k + j
"""Scatter-based head merge with ``np.put``.

The split is a plain reshape/transpose; the merge computes, for every element
of the (B, H, T, d_k) input, its flat position in the (B, T, D) output and
writes everything in one ``np.put`` call.  Softmax sums with ``cumsum``.
"""

import math

import numpy as np


def softmax(x):
    x = np.asarray(x)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / np.cumsum(e, axis=-1)[..., -1:]


def scaled_dot_product_attention(Q, K, V):
    logits = Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1])
    weights = softmax(logits)
    return weights @ V, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("num_heads must divide d_model")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        sd = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, sd, (d_model, d_model))
        self.W_K = rng.normal(0.0, sd, (d_model, d_model))
        self.W_V = rng.normal(0.0, sd, (d_model, d_model))
        self.W_O = rng.normal(0.0, sd, (d_model, d_model))

    def split_heads(self, x):
        B, T, _ = x.shape
        return x.reshape(B, T, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        B, H, T, dk = x.shape
        merged = np.empty((B, T, H * dk), dtype=x.dtype)
        # flat output positions, arranged so that they line up with x's C order
        pos = np.arange(math.prod(merged.shape)).reshape(B, T, dk, H).transpose(0, 3, 1, 2)
        np.put(merged, pos, x)
        return merged

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        att, weights = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(att) @ self.W_O
        if return_weights:
            return out, weights
        return out
