# expect: mha-wrong-projection
# Every projection is np.inner(x, W), which contracts the last axis of W as well: it computes x @ W.T for all four matrices.
"""Multi-head attention written with NumPy's named product functions.

The projections go through one helper built on np.inner, the attention through
np.matmul, and the heads are moved with np.moveaxis.
"""

import numpy as np


def _project(x, W):
    """Apply a (D, D) projection to the last axis of x."""
    return np.inner(x, W)


def softmax(x):
    row_max = np.max(x, axis=-1, keepdims=True)
    e = np.exp(x - row_max)
    return e / np.sum(e, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    scores = np.matmul(Q, np.moveaxis(K, -1, -2)) / np.sqrt(d_k)  # (B, H, T, S)
    weights = softmax(scores)
    return np.matmul(weights, V), weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError(f"d_model={d_model} must be divisible by num_heads={num_heads}")
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
        b, t, _ = x.shape
        return np.moveaxis(x.reshape(b, t, self.num_heads, self.d_k), 2, 1)  # (B, H, T, d_k)

    def combine_heads(self, x):
        b, h, t, d_k = x.shape
        return np.moveaxis(x, 1, 2).reshape(b, t, h * d_k)  # (B, T, D)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(_project(Q, self.W_Q))
        k = self.split_heads(_project(K, self.W_K))
        v = self.split_heads(_project(V, self.W_V))
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = _project(self.combine_heads(heads), self.W_O)
        if return_weights:
            return out, weights
        return out
