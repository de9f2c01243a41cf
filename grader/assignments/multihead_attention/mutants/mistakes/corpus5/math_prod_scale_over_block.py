# expect: attention-wrong-scale
# the score scale is computed as sqrt(math.prod(Q.shape[-2:])), i.e. sqrt(T * d_k) instead of sqrt(d_k)
"""Shape-generic multi-head attention using ``math.prod`` for sizes.

Written to work for any number of leading axes: sizes are computed with
``math.prod`` over shape slices rather than unpacked by name.
"""

import math

import numpy as np


def softmax(x):
    x = np.asarray(x)
    e = np.exp(x - np.amax(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    # "size of one query block" -- used for the 1/sqrt(.) temperature
    width = math.prod(Q.shape[-2:])
    logits = np.matmul(Q, np.swapaxes(K, -1, -2)) / math.sqrt(width)
    w = softmax(logits)
    return np.matmul(w, V), w


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model has to be divisible by num_heads")
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
        lead = x.shape[:-1]                       # (B, T)
        x = x.reshape(*lead, self.num_heads, self.d_k)
        return np.moveaxis(x, -2, -3)             # (B, H, T, d_k)

    def combine_heads(self, x):
        x = np.moveaxis(x, -3, -2)                # (B, T, H, d_k)
        return x.reshape(*x.shape[:-2], math.prod(x.shape[-2:]))

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        z, w = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(z) @ self.W_O
        if return_weights:
            return out, w
        return out
