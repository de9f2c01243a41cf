# expect: correct
# Loops over itertools.product(batch, head) with np.dot per matrix and one-letter helpers (m, e, p); no known mistakes.
import itertools

import numpy as np


def m(a):
    # row max, kept as a column so it broadcasts back
    return np.max(a, axis=-1, keepdims=True)


def e(a):
    # exp after shifting every row by its own max -> largest term is 1
    return np.exp(a - m(a))


def p(a, W):
    # (..., D) @ (D, D) via a 2-D np.dot, reshaped back to the input's leading shape
    n = a.shape[-1]
    return np.dot(a.reshape(-1, n), W).reshape(a.shape[:-1] + (W.shape[1],))


def softmax(x):
    x = np.asarray(x)
    z = e(x)
    return z / np.sum(z, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    B, H, T, d = Q.shape
    S = K.shape[2]
    c = 1.0 / np.sqrt(d)
    w = np.empty((B, H, T, S))
    o = np.empty((B, H, T, V.shape[-1]))
    for b, h in itertools.product(range(B), range(H)):
        s = np.dot(Q[b, h], K[b, h].T) * c  # (T, S)
        w[b, h] = softmax(s)
        o[b, h] = np.dot(w[b, h], V[b, h])  # (T, d_k)
    return o, w


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if num_heads <= 0 or d_model % num_heads:
            raise ValueError("num_heads has to divide d_model (got %d, %d)" % (d_model, num_heads))
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
        B, T, _ = x.shape
        H, d = self.num_heads, self.d_k
        y = np.empty((B, H, T, d), dtype=np.result_type(x, np.float64))
        for b, h in itertools.product(range(B), range(H)):
            y[b, h] = x[b, :, h * d:(h + 1) * d]
        return y

    def combine_heads(self, x):
        B, H, T, d = x.shape
        y = np.empty((B, T, H * d), dtype=np.result_type(x, np.float64))
        for b, h in itertools.product(range(B), range(H)):
            y[b, :, h * d:(h + 1) * d] = x[b, h]
        return y

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(p(Q, self.W_Q))
        k = self.split_heads(p(K, self.W_K))
        v = self.split_heads(p(V, self.W_V))
        o, w = scaled_dot_product_attention(q, k, v)
        y = p(self.combine_heads(o), self.W_O)
        return (y, w) if return_weights else y
