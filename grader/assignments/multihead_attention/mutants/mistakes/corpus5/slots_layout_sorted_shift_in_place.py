# expect: split-heads-no-transpose, softmax-mutates-input
# softmax subtracts the row max (found with np.sort) from x with -=, writing into the caller's array; split_heads reshapes (B, T, D) directly to (B, H, T, d_k), so heads get the wrong features
"""Multi-head attention with a ``__slots__`` layout record.

``HeadLayout`` stores the sizes and computes the per-head shape; the softmax
gets each row's max by sorting.
"""

import math

import numpy as np


class HeadLayout:
    __slots__ = ("heads", "width")

    def __init__(self, heads, width):
        self.heads = heads
        self.width = width

    def split_shape(self, batch, length):
        return (batch, self.heads, length, self.width)


def softmax(x):
    # shift in place: no extra (..., N) array for x - max
    x -= np.sort(x, axis=-1)[..., -1:]
    e = np.exp(x)
    return e / e.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1])
    probs = softmax(scores)
    return probs @ V, probs


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.layout = HeadLayout(num_heads, self.d_k)
        rng = np.random.default_rng(0)
        std = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, std, (d_model, d_model))
        self.W_K = rng.normal(0.0, std, (d_model, d_model))
        self.W_V = rng.normal(0.0, std, (d_model, d_model))
        self.W_O = rng.normal(0.0, std, (d_model, d_model))

    def split_heads(self, x):
        B, T, _ = x.shape
        return x.reshape(self.layout.split_shape(B, T))

    def combine_heads(self, x):
        B, H, T, dk = x.shape
        return x.transpose(0, 2, 1, 3).reshape(B, T, H * dk)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        ctx, probs = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(ctx) @ self.W_O
        if return_weights:
            return out, probs
        return out
