# expect: attention-softmax-wrong-axis
# Mistake in scaled_dot_product_attention: scores are built keys-by-queries (B, H, S, T) and softmaxed on their last axis, i.e. over the queries, before being rolled back to (B, H, T, S).
"""Multi-head attention using np.rollaxis for every axis shuffle."""

import numpy as np


def softmax(x):
    """Stable softmax along the last axis."""
    shift = np.max(x, axis=-1, keepdims=True)
    num = np.exp(x - shift)
    return num / np.sum(num, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    # similarity of every key with every query: (B, H, S, d_k) @ (B, H, d_k, T)
    sims = np.matmul(K, np.rollaxis(Q, 3, 2)) / np.sqrt(d_k)   # (B, H, S, T)
    sims = softmax(sims)
    weights = np.rollaxis(sims, 3, 2)                           # (B, H, T, S)
    out = np.matmul(weights, V)                                 # (B, H, T, d_k)
    return out, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model is not a multiple of num_heads")
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
        B, T, D = x.shape
        x = x.reshape(B, T, self.num_heads, self.d_k)
        return np.rollaxis(x, 2, 1)          # heads axis to position 1

    def combine_heads(self, x):
        B, H, T, d_k = x.shape
        x = np.rollaxis(x, 1, 3)             # heads axis back behind T
        return x.reshape(B, T, H * d_k)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        out, weights = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(out) @ self.W_O
        return (out, weights) if return_weights else out
