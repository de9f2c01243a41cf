# expect: split-heads-no-transpose
# split_heads builds its view with the strides of a contiguous (B, H, T, d_k) array, which is a plain reshape: each head gets whole positions, not a block of features.
"""Multi-head attention where the heads are strided views built with numpy.lib.stride_tricks.

A small helper computes row-major strides for a target shape, and split_heads asks
as_strided for a read-only view of that shape over the projected array before
copying it. combine_heads goes the other way with an explicit transpose.
"""

import numpy as np
from numpy.lib.stride_tricks import as_strided


def _row_major_strides(shape, itemsize):
    """Strides, in bytes, of a C-contiguous array of the given shape."""
    strides = []
    step = itemsize
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


def softmax(x):
    x = np.asarray(x, dtype=float)
    peak = np.max(x, axis=-1, keepdims=True)  # (..., 1)
    e = np.exp(x - peak)
    return e / np.sum(e, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    scores = np.matmul(Q, np.swapaxes(K, -1, -2)) / np.sqrt(d_k)  # (B, H, T, S)
    weights = softmax(scores)
    return np.matmul(weights, V), weights  # (B, H, T, d_k), (B, H, T, S)


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError(f"num_heads={num_heads} does not divide d_model={d_model}")
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
        x = np.ascontiguousarray(x)
        b, t, _ = x.shape
        shape = (b, self.num_heads, t, self.d_k)
        # A view with the target shape over the same buffer, no data copied yet.
        view = as_strided(x, shape=shape, strides=_row_major_strides(shape, x.itemsize), writeable=False)
        return view.copy()  # (B, H, T, d_k)

    def combine_heads(self, x):
        b, h, t, d_k = x.shape
        positions_first = np.ascontiguousarray(x.transpose(0, 2, 1, 3))  # (B, T, H, d_k)
        return positions_first.reshape(b, t, h * d_k)  # (B, T, D)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(np.matmul(Q, self.W_Q))  # (B, H, T, d_k)
        k = self.split_heads(np.matmul(K, self.W_K))  # (B, H, S, d_k)
        v = self.split_heads(np.matmul(V, self.W_V))  # (B, H, S, d_k)
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = np.matmul(self.combine_heads(heads), self.W_O)  # (B, T, D)
        if return_weights:
            return out, weights
        return out
