# expect: attention-no-scale, combine-heads-no-transpose
# the gufunc score kernel is a bare q @ k.T with no 1/sqrt(d_k); combine_heads reshapes (B, H, T, d_k) straight to (B, T, H*d_k) without moving the head axis back
"""gufunc-flavoured multi-head attention returning a ``NamedTuple``.

Scores and the value mix are ``np.vectorize`` kernels with core signatures;
``math.prod`` computes the merged width.
"""

import math
from typing import NamedTuple

import numpy as np


class AttentionResult(NamedTuple):
    output: np.ndarray
    weights: np.ndarray


def softmax(x):
    x = np.asarray(x)
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


_qk = np.vectorize(lambda q, k: q @ k.T, signature="(t,d),(s,d)->(t,s)")
_wv = np.vectorize(lambda w, v: w @ v, signature="(t,s),(s,d)->(t,d)")


def scaled_dot_product_attention(Q, K, V):
    logits = _qk(Q, K)
    weights = softmax(logits)
    return AttentionResult(_wv(weights, V), weights)


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("num_heads must divide d_model exactly")
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
        B, T, _ = x.shape
        return x.reshape(B, T, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        B, H, T, dk = x.shape
        return np.reshape(x, (B, T, math.prod((H, dk))))

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        output, weights = scaled_dot_product_attention(q, k, v)
        output = self.combine_heads(output) @ self.W_O
        if return_weights:
            return output, weights
        return output
