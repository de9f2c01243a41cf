# expect: split-heads-wrong-axes
# Mistake in split_heads: the per-head slices are np.stack'ed on axis=2, giving (B, T, H, d_k) instead of (B, H, T, d_k).
"""Multi-head attention, building the heads one at a time."""

import numpy as np


def softmax(x):
    """Numerically stable softmax over the last axis."""
    m = np.amax(x, axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    scores = np.matmul(Q, np.swapaxes(K, -2, -1)) / np.sqrt(d_k)
    weights = softmax(scores)
    return np.matmul(weights, V), weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model % num_heads != 0")
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
        # one (B, T, d_k) slice of the features per head
        heads = []
        for h in range(self.num_heads):
            start = h * self.d_k
            heads.append(x[..., start:start + self.d_k])
        # put the heads next to each other, one axis before the features
        return np.stack(heads, axis=2)

    def combine_heads(self, x):
        # x[:, h] is head h as (B, T, d_k); glue them back feature-wise
        heads = [x[:, h, :, :] for h in range(x.shape[1])]
        return np.concatenate(heads, axis=2)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        attended, weights = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(attended) @ self.W_O
        if return_weights:
            return out, weights
        return out
