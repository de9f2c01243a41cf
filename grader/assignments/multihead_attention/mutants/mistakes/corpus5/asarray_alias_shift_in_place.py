# expect: softmax-mutates-input
# softmax: np.asarray(x, dtype=float) returns the caller's own float64 array, and the row max is then subtracted from it in place, so the input is overwritten.
import math

import numpy as np


def softmax(x):
    x = np.asarray(x, dtype=float)             # ints -> floats
    x -= x.max(axis=-1, keepdims=True)         # shift rows, no extra temporary
    e = np.exp(x)
    return e / e.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    scores = np.matmul(Q, K.swapaxes(-1, -2)) / math.sqrt(d_k)
    w = softmax(scores)
    return np.matmul(w, V), w


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads:
            raise ValueError("num_heads must divide d_model")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, scale, (d_model, d_model))
        self.W_K = rng.normal(0.0, scale, (d_model, d_model))
        self.W_V = rng.normal(0.0, scale, (d_model, d_model))
        self.W_O = rng.normal(0.0, scale, (d_model, d_model))

    def _projector(self, name):
        # looks the matrix up at call time, so swapping weights later still works
        def project(x):
            return x @ getattr(self, name)
        return project

    def split_heads(self, x):
        n, length, _ = x.shape
        return x.reshape(n, length, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        n, _, length, _ = x.shape
        return x.transpose(0, 2, 1, 3).reshape(n, length, self.d_model)

    def forward(self, Q, K, V, return_weights=False):
        to_q, to_k, to_v, to_out = (self._projector(n) for n in ("W_Q", "W_K", "W_V", "W_O"))
        heads, w = scaled_dot_product_attention(
            self.split_heads(to_q(Q)), self.split_heads(to_k(K)), self.split_heads(to_v(V)))
        out = to_out(self.combine_heads(heads))
        return (out, w) if return_weights else out
