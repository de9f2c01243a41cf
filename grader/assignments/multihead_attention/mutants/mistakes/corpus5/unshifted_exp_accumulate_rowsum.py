# expect: softmax-unstable
# softmax exponentiates the logits as they are (no max subtracted), so large scores overflow to inf and the rows become nan; row sum taken from np.add.accumulate
"""Course-repo style multi-head attention with a small ``__slots__`` record.

The head bookkeeping (how many heads, how wide each one is) lives in a tiny
slotted class; attention loops over (batch, head) pairs with
``itertools.product``.
"""

import itertools

import numpy as np


class HeadGeometry:
    __slots__ = ("d_model", "num_heads", "d_k")

    def __init__(self, d_model, num_heads):
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads


def softmax(x):
    # e^x / sum(e^x) along the last axis
    numer = np.exp(x)
    denom = np.add.accumulate(numer, axis=-1)[..., -1:]   # running total, keep the last one
    return numer / denom


def scaled_dot_product_attention(Q, K, V):
    *lead, T, d_k = Q.shape
    S = K.shape[-2]
    out = np.zeros((*lead, T, V.shape[-1]))
    attn = np.zeros((*lead, T, S))
    for idx in itertools.product(*map(range, lead)):
        s = Q[idx] @ K[idx].T / np.sqrt(d_k)
        attn[idx] = softmax(s)
        out[idx] = attn[idx] @ V[idx]
    return out, attn


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model % num_heads must be 0")
        geo = HeadGeometry(d_model, num_heads)
        self.geometry = geo
        self.d_model, self.num_heads, self.d_k = geo.d_model, geo.num_heads, geo.d_k
        rng = np.random.default_rng(0)
        sigma = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, sigma, (d_model, d_model))
        self.W_K = rng.normal(0.0, sigma, (d_model, d_model))
        self.W_V = rng.normal(0.0, sigma, (d_model, d_model))
        self.W_O = rng.normal(0.0, sigma, (d_model, d_model))

    def split_heads(self, x):
        B, T, _ = x.shape
        return x.reshape(B, T, self.num_heads, self.d_k).swapaxes(1, 2)

    def combine_heads(self, x):
        B, H, T, dk = x.shape
        return x.swapaxes(1, 2).reshape(B, T, H * dk)

    def forward(self, Q, K, V, return_weights=False):
        qh = self.split_heads(Q @ self.W_Q)
        kh = self.split_heads(K @ self.W_K)
        vh = self.split_heads(V @ self.W_V)
        ctx, attn = scaled_dot_product_attention(qh, kh, vh)
        y = self.combine_heads(ctx) @ self.W_O
        if return_weights:
            return y, attn
        return y
