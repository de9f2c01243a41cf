# expect: attention-softmax-wrong-axis
# the attention weights are built one key column at a time, each column softmaxed over the queries (so columns, not rows, sum to 1)
"""Explicit-loop attention, filling the weight matrix column by column.

Everything is preallocated and filled with nested Python loops over
(batch, head) and then over keys; no ``np.linalg`` or einsum anywhere.
"""

import itertools

import numpy as np


def softmax(x):
    x = np.asarray(x)
    m = np.max(x, axis=-1, keepdims=True)
    ex = np.exp(x - m)
    return ex / ex.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    *lead, T, d_k = Q.shape
    S = K.shape[-2]
    weights = np.empty((*lead, T, S))
    out = np.empty((*lead, T, V.shape[-1]))
    for idx in itertools.product(*(range(n) for n in lead)):
        scores = Q[idx] @ K[idx].T / np.sqrt(d_k)       # (T, S)
        # attention distribution for key j over all queries
        for j in range(S):
            weights[idx][:, j] = softmax(scores[:, j])
        out[idx] = weights[idx] @ V[idx]
    return out, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model not divisible by num_heads")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        std = 1 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, std, (d_model, d_model))
        self.W_K = rng.normal(0.0, std, (d_model, d_model))
        self.W_V = rng.normal(0.0, std, (d_model, d_model))
        self.W_O = rng.normal(0.0, std, (d_model, d_model))

    def split_heads(self, x):
        B, T, D = x.shape
        out = np.empty((B, self.num_heads, T, self.d_k), dtype=x.dtype)
        for h in range(self.num_heads):
            lo = h * self.d_k
            out[:, h] = x[:, :, lo:lo + self.d_k]
        return out

    def combine_heads(self, x):
        B, H, T, dk = x.shape
        out = np.empty((B, T, H * dk), dtype=x.dtype)
        for h in range(H):
            out[:, :, h * dk:(h + 1) * dk] = x[:, h]
        return out

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(heads) @ self.W_O
        if return_weights:
            return out, weights
        return out
