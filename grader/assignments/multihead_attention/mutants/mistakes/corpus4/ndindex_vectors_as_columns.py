# expect: softmax-wrong-axis
# The softmax treats each column as one distribution (vectors as columns, as in the lecture notes): it loops over x.shape[1:] and normalises along axis 0.
"""Multi-head attention written one matrix at a time: np.ndindex walks the leading axes, each (T, S) problem
is solved in 2-D, and every softmax row is normalised with the exactly rounded math.fsum."""

import math

import numpy as np


def softmax(x):
    x = np.asarray(x, dtype=float)
    out = np.empty_like(x)
    # A distribution is a column vector, as in the notes: one per index of the
    # other axes; a 1-D x gives the single index ().
    for idx in np.ndindex(*x.shape[1:]):
        col = (slice(None),) + idx
        e = np.exp(x[col] - x[col].max())
        out[col] = e / math.fsum(e)
    return out


def scaled_dot_product_attention(Q, K, V):
    *lead, T, d_k = Q.shape
    S = K.shape[-2]
    out = np.empty((*lead, T, V.shape[-1]))
    weights = np.empty((*lead, T, S))
    root = math.sqrt(d_k)
    for idx in np.ndindex(*lead):  # (b, h) pairs
        scores = Q[idx] @ K[idx].T / root  # (T, S); .T is fine on a 2-D slice
        w = softmax(scores)
        weights[idx] = w
        out[idx] = w @ V[idx]  # (T, d_k)
    return out, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if num_heads * (d_model // num_heads) != d_model:
            raise ValueError(f"{d_model} features do not split into {num_heads} heads")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        std = 1.0 / math.sqrt(d_model)
        self.W_Q = rng.normal(0.0, std, (d_model, d_model))
        self.W_K = rng.normal(0.0, std, (d_model, d_model))
        self.W_V = rng.normal(0.0, std, (d_model, d_model))
        self.W_O = rng.normal(0.0, std, (d_model, d_model))

    def split_heads(self, x):
        B, T, _ = x.shape
        out = np.empty((B, self.num_heads, T, self.d_k), dtype=x.dtype)
        for b, h in np.ndindex(B, self.num_heads):
            out[b, h] = x[b, :, h * self.d_k:(h + 1) * self.d_k]
        return out

    def combine_heads(self, x):
        B, H, T, d_k = x.shape
        out = np.empty((B, T, H * d_k), dtype=x.dtype)
        for b, h in np.ndindex(B, H):
            out[b, :, h * d_k:(h + 1) * d_k] = x[b, h]
        return out

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(heads) @ self.W_O
        return (out, weights) if return_weights else out
