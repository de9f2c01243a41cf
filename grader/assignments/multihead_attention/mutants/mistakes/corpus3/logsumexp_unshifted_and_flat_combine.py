# expect: softmax-unstable, combine-heads-no-transpose
# Two mistakes: the log-sum-exp exponentiates the raw logits, and combine_heads reshapes without moving the heads back.
"""Multi-head attention with softmax written as exp(x - logsumexp(x)) from scratch, the queries scaled before the product."""

import numpy as np


def _logsumexp(x):
    return np.log(np.sum(np.exp(x), axis=-1, keepdims=True))  # (..., 1)


def softmax(x):
    return np.exp(x - _logsumexp(x))


def scaled_dot_product_attention(Q, K, V):
    Q = Q * Q.shape[-1] ** -0.5  # scale the queries once instead of every score
    scores = Q @ K.swapaxes(-1, -2)  # (B, H, T, S)
    weights = softmax(scores)
    return weights @ V, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError(f"d_model={d_model} cannot be split into {num_heads} heads")
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
        return x.reshape(B, T, self.num_heads, self.d_k).swapaxes(1, 2)  # (B, H, T, d_k)

    def combine_heads(self, x):
        B, H, T, d_k = x.shape
        return x.reshape(B, T, H * d_k)  # (B, T, D)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(heads) @ self.W_O
        return (out, weights) if return_weights else out
