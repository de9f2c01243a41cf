"""Projections with np.tensordot, heads with moveaxis."""

import numpy as np


def softmax(x):
    z = x - x.max(axis=-1, keepdims=True)
    np.exp(z, out=z)
    z /= z.sum(axis=-1, keepdims=True)
    return z


def scaled_dot_product_attention(Q, K, V):
    scale = Q.shape[-1] ** -0.5
    weights = softmax(Q @ np.moveaxis(K, -1, -2) * scale)
    return weights @ V, weights


def project(x, W):
    return np.tensordot(x, W, axes=([2], [0]))  # (B, T, D)


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("bad head count")
        self.num_heads = num_heads
        self.W_Q = self.W_K = self.W_V = self.W_O = np.eye(d_model)

    def split_heads(self, x):
        B, T, D = x.shape
        return np.moveaxis(x.reshape(B, T, self.num_heads, D // self.num_heads), 2, 1)

    def combine_heads(self, x):
        B, H, T, d_k = x.shape
        return np.moveaxis(x, 1, 2).reshape(B, T, H * d_k)

    def forward(self, Q, K, V, return_weights=False):
        heads, weights = scaled_dot_product_attention(
            self.split_heads(project(Q, self.W_Q)),
            self.split_heads(project(K, self.W_K)),
            self.split_heads(project(V, self.W_V)),
        )
        out = project(self.combine_heads(heads), self.W_O)
        return (out, weights) if return_weights else out
