# expect: correct
"""Multi-head attention with reductions through np.apply_over_axes and the scale read off a vector norm."""

import numpy as np


def softmax(x):
    x = np.asarray(x, dtype=float)
    last = x.ndim - 1
    shifted = x - np.apply_over_axes(np.max, x, [last])  # row max kept as a size-1 axis
    e = np.exp(shifted)
    return e * np.reciprocal(np.apply_over_axes(np.sum, e, [last]))


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    # ||(1, ..., 1)|| over d_k entries is sqrt(d_k).
    scale = 1.0 / np.linalg.norm(np.ones(d_k))
    scores = np.matmul(Q, np.swapaxes(K, -2, -1)) * scale  # (B, H, T, S)
    weights = softmax(scores)
    return np.matmul(weights, V), weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError(f"cannot split d_model={d_model} into num_heads={num_heads} equal heads")
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
        batch, length, _ = x.shape
        return np.transpose(x.reshape(batch, length, self.num_heads, self.d_k), (0, 2, 1, 3))  # (B, H, T, d_k)

    def combine_heads(self, x):
        batch, heads, length, d_k = x.shape
        return np.transpose(x, (0, 2, 1, 3)).reshape(batch, length, heads * d_k)  # (B, T, D)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(np.matmul(Q, self.W_Q))
        k = self.split_heads(np.matmul(K, self.W_K))
        v = self.split_heads(np.matmul(V, self.W_V))
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = np.matmul(self.combine_heads(heads), self.W_O)
        if return_weights:
            return out, weights
        return out
