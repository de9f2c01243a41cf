# expect: correct
# BaseAttention holds the weights, a HeadLayoutMixin does the reshaping, MultiHeadAttention glues them; scale from the math module. No mistakes.
import math

import numpy as np


def softmax(x):
    """Row-wise softmax over the last axis (shift by the row max first)."""
    z = np.array(x, dtype=float)            # private copy, caller's array untouched
    z -= z.max(axis=-1, keepdims=True)
    np.exp(z, out=z)
    z /= z.sum(axis=-1, keepdims=True)
    return z


def _inverse_root(n):
    r = math.isqrt(n)
    if r * r == n:                          # exact for 1, 4, 9, ...
        return 1.0 / r
    return 1.0 / math.sqrt(n)


def scaled_dot_product_attention(Q, K, V):
    factor = _inverse_root(Q.shape[-1])
    raw = np.einsum("bhtd,bhsd->bhts", Q, K)
    attn = softmax(raw * factor)
    return np.einsum("bhts,bhsd->bhtd", attn, V), attn


class BaseAttention:
    def __init__(self, d_model, num_heads):
        if not isinstance(num_heads, int) or num_heads < 1:
            raise ValueError("num_heads must be a positive integer")
        if d_model % num_heads:
            raise ValueError("d_model must be a multiple of num_heads")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self._init_weights()

    def _init_weights(self):
        rng = np.random.default_rng(0)
        std = 1.0 / np.sqrt(self.d_model)
        for name in ("W_Q", "W_K", "W_V", "W_O"):
            setattr(self, name, rng.normal(0.0, std, (self.d_model, self.d_model)))

    def project(self, x, name):
        return x @ getattr(self, name)


class HeadLayoutMixin:
    def split_heads(self, x):
        n_batch, n_pos = x.shape[:2]
        return np.transpose(x.reshape(n_batch, n_pos, self.num_heads, self.d_k), (0, 2, 1, 3))

    def combine_heads(self, x):
        n_batch, n_heads, n_pos, width = x.shape
        return np.transpose(x, (0, 2, 1, 3)).reshape(n_batch, n_pos, n_heads * width)


class MultiHeadAttention(HeadLayoutMixin, BaseAttention):
    def __init__(self, d_model=8, num_heads=2):
        super().__init__(d_model, num_heads)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(self.project(Q, "W_Q"))
        k = self.split_heads(self.project(K, "W_K"))
        v = self.split_heads(self.project(V, "W_V"))
        mixed, attn = scaled_dot_product_attention(q, k, v)
        out = self.project(self.combine_heads(mixed), "W_O")
        if return_weights:
            return out, attn
        return out
