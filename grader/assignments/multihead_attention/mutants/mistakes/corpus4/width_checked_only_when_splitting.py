# expect: mha-no-divisibility-check
# The constructor accepts any sizes; the divisibility test was moved into split_heads, so the error only appears on the first call and the layer is built with a rounded-down d_k.
"""Multi-head attention with validation done lazily, at the point where shapes are used.

Inputs are checked where they are consumed: split_heads and combine_heads verify
the widths they are given before reshaping, and forward checks its arguments'
ranks. Everything else is the plain reshape-and-matmul layout.
"""

import numpy as np


def softmax(x):
    x = np.asarray(x)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    scores = np.matmul(Q, K.swapaxes(-1, -2)) / np.sqrt(d_k)  # (B, H, T, S)
    weights = softmax(scores)
    return np.matmul(weights, V), weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, scale, (d_model, d_model))
        self.W_K = rng.normal(0.0, scale, (d_model, d_model))
        self.W_V = rng.normal(0.0, scale, (d_model, d_model))
        self.W_O = rng.normal(0.0, scale, (d_model, d_model))

    def _check_width(self, width):
        if width != self.num_heads * self.d_k:
            raise ValueError(
                f"width {width} cannot be split into {self.num_heads} heads of {self.d_k}"
            )

    def split_heads(self, x):
        b, t, d = x.shape
        self._check_width(d)
        return x.reshape(b, t, self.num_heads, self.d_k).transpose(0, 2, 1, 3)  # (B, H, T, d_k)

    def combine_heads(self, x):
        b, h, t, d_k = x.shape
        return x.transpose(0, 2, 1, 3).reshape(b, t, h * d_k)  # (B, T, D)

    def forward(self, Q, K, V, return_weights=False):
        for name, arr in (("Q", Q), ("K", K), ("V", V)):
            if np.ndim(arr) != 3:
                raise ValueError(f"{name} must be (batch, length, d_model), got shape {np.shape(arr)}")
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(heads) @ self.W_O
        if return_weights:
            return out, weights
        return out
