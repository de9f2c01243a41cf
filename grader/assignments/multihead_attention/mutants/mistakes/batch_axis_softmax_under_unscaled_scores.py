# expect: softmax-wrong-axis, attention-no-scale
# Two mistakes on one path: softmax reduces over the first axis (the batch, for 4-D scores) with
# np.maximum.reduce and np.add.reduce, and attention never divides the scores by sqrt(d_k).
"""Reductions written as ufunc methods, attention as one einsum per product, the layer with its
matrices in a dict."""

import numpy as np


def softmax(x):
    x = np.asarray(x, dtype=float)
    top = np.maximum.reduce(x, axis=0, keepdims=True)
    e = np.exp(x - top)
    return e / np.add.reduce(e, axis=0, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    scores = np.einsum("...qd,...kd->...qk", Q, K)  # the scale was meant to go here
    weights = softmax(scores)
    return np.einsum("...qk,...kd->...qd", weights, V), weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads:
            raise ValueError("d_model must split evenly over the heads")
        self.d_model, self.num_heads, self.d_k = d_model, num_heads, d_model // num_heads
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(d_model)
        self.W_Q, self.W_K, self.W_V, self.W_O = (rng.normal(0.0, scale, (d_model, d_model)) for _ in range(4))

    def split_heads(self, x):
        B, T, _ = x.shape
        return np.einsum("bthd->bhtd", x.reshape(B, T, self.num_heads, self.d_k))

    def combine_heads(self, x):
        B, H, T, d_k = x.shape
        return np.einsum("bhtd->bthd", x).reshape(B, T, H * d_k)

    def forward(self, Q, K, V, return_weights=False):
        mats = {"q": self.W_Q, "k": self.W_K, "v": self.W_V}
        heads = {name: self.split_heads(x @ mats[name]) for name, x in (("q", Q), ("k", K), ("v", V))}
        out, weights = scaled_dot_product_attention(heads["q"], heads["k"], heads["v"])
        out = self.combine_heads(out) @ self.W_O
        return (out, weights) if return_weights else out
