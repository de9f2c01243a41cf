# expect: split-heads-wrong-axes
# After np.split and np.stack on the last axis give (B, T, d_k, H), the transpose (0, 3, 2, 1) returns (B, H, d_k, T) instead of (B, H, T, d_k).
"""Multi-head attention written with np.split, np.stack and np.concatenate.

The features are cut into H pieces with np.split and stacked on a new trailing
axis; np.transpose with an explicit axes tuple then brings the heads forward.
combine_heads concatenates one slice per head.
"""

import numpy as np


def softmax(x):
    m = np.max(x, axis=-1, keepdims=True)
    e = np.exp(np.subtract(x, m))
    return np.divide(e, np.sum(e, axis=-1, keepdims=True))


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    K_t = np.transpose(K, (0, 1, 3, 2))  # (B, H, d_k, S)
    weights = softmax(np.matmul(Q, K_t) / np.sqrt(d_k))  # (B, H, T, S)
    return np.matmul(weights, V), weights


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
        pieces = np.split(x, self.num_heads, axis=-1)  # H arrays of (B, T, d_k)
        stacked = np.stack(pieces, axis=-1)  # (B, T, d_k, H)
        return np.transpose(stacked, (0, 3, 2, 1))

    def combine_heads(self, x):
        return np.concatenate([x[:, i] for i in range(x.shape[1])], axis=-1)  # (B, T, D)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(np.dot(Q, self.W_Q))
        k = self.split_heads(np.dot(K, self.W_K))
        v = self.split_heads(np.dot(V, self.W_V))
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = np.dot(self.combine_heads(heads), self.W_O)
        if return_weights:
            return out, weights
        return out
