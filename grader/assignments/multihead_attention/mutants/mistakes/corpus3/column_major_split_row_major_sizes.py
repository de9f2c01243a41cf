# expect: split-heads-interleaved
# The column-major reshape is given the sizes in (H, d_k) order, so feature d goes to head d % H.
"""Multi-head attention with axis moves instead of keepdims, and column-major reshapes for the heads."""

import numpy as np


def softmax(x):
    # Bring the normalised axis to the front: reductions over axis 0 then
    # broadcast back against the remaining trailing axes without keepdims.
    z = np.moveaxis(np.asarray(x, dtype=float), -1, 0)  # (N, ...)
    z = z - z.max(axis=0)
    e = np.exp(z)
    return np.moveaxis(e / e.sum(axis=0), 0, -1)  # (..., N)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    keys_t = np.moveaxis(K, -1, -2)  # (B, H, d_k, S)
    scores = np.matmul(Q, keys_t) * np.reciprocal(np.sqrt(d_k))  # (B, H, T, S)
    weights = softmax(scores)
    return np.matmul(weights, V), weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model must be a multiple of num_heads")
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
        # Column-major: the first index runs fastest, so feature d = j + d_k * h.
        x = x.reshape((b, t, self.num_heads, self.d_k), order="F")  # (B, T, H, d_k)
        return np.moveaxis(x, 2, 1)  # (B, H, T, d_k)

    def combine_heads(self, x):
        b, h, t, d_k = x.shape
        x = np.moveaxis(x, 1, 3)  # (B, T, d_k, H)
        return x.reshape((b, t, h * d_k), order="F")  # (B, T, D)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(heads) @ self.W_O
        return (out, weights) if return_weights else out
