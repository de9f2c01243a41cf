# expect: correct
"""Multi-head attention with a base-2 softmax (np.exp2 of the shifted logits times log2(e)) and heads read
from a sliding_window_view of width d_k taken every d_k features."""

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

# e**z == 2**(z * log2(e)); GPU kernels prefer exp2, and so does this module.
LOG2E = np.log2(np.e)


def softmax(x):
    x = np.asarray(x)
    z = (x - x.max(axis=-1, keepdims=True)) * LOG2E  # (..., N), every entry <= 0
    p = np.exp2(z)
    return p / p.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    scores = np.matmul(Q, np.swapaxes(K, -1, -2)) * (1.0 / np.sqrt(d_k))  # (B, H, T, S)
    weights = softmax(scores)
    return np.matmul(weights, V), weights  # (B, H, T, d_k), (B, H, T, S)


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError(f"cannot split d_model={d_model} into {num_heads} equal heads")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        std = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, std, (d_model, d_model))
        self.W_K = rng.normal(0.0, std, (d_model, d_model))
        self.W_V = rng.normal(0.0, std, (d_model, d_model))
        self.W_O = rng.normal(0.0, std, (d_model, d_model))

    def split_heads(self, x):
        # Every window of d_k consecutive features, then keep one window in d_k:
        # windows starting at 0, d_k, 2*d_k, ... are exactly the heads' blocks.
        windows = sliding_window_view(x, self.d_k, axis=-1)  # (B, T, D - d_k + 1, d_k)
        blocks = windows[:, :, :: self.d_k, :]  # (B, T, H, d_k)
        return blocks.transpose(0, 2, 1, 3).copy()  # (B, H, T, d_k), writable

    def combine_heads(self, x):
        per_head = list(np.moveaxis(x, 1, 0))  # H arrays of (B, T, d_k)
        return np.concatenate(per_head, axis=-1)  # (B, T, D)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        context, weights = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(context) @ self.W_O
        if return_weights:
            return out, weights
        return out
