# expect: split-heads-hardcoded-shape
# split_heads writes the head width as the literal 4 (the default layer's d_k) and lets -1 find the number of heads, so any other head width is cut wrongly.
"""Multi-head attention with projections through np.tensordot and axis tuples for np.transpose.

Every projection contracts the last axis of the input with the first axis of the
matrix using np.tensordot(..., axes=1). The code was first tried on the default
layer, 8 features in 2 heads.
"""

import numpy as np


def softmax(x):
    top = np.amax(x, axis=-1, keepdims=True)
    e = np.exp(x - top)
    return e / e.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    scores = np.matmul(Q, np.transpose(K, (0, 1, 3, 2))) * (1.0 / np.sqrt(d_k))  # (B, H, T, S)
    weights = softmax(scores)
    return np.matmul(weights, V), weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads:
            raise ValueError(f"cannot split d_model={d_model} into {num_heads} equal heads")
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
        blocks = np.reshape(x, (b, t, -1, 4))  # (B, T, H, d_k)
        return np.transpose(blocks, (0, 2, 1, 3))  # (B, H, T, d_k)

    def combine_heads(self, x):
        b, h, t, d_k = x.shape
        return np.reshape(np.transpose(x, (0, 2, 1, 3)), (b, t, h * d_k))  # (B, T, D)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(np.tensordot(Q, self.W_Q, axes=1))
        k = self.split_heads(np.tensordot(K, self.W_K, axes=1))
        v = self.split_heads(np.tensordot(V, self.W_V, axes=1))
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = np.tensordot(self.combine_heads(heads), self.W_O, axes=1)  # (B, T, D)
        if return_weights:
            return out, weights
        return out
