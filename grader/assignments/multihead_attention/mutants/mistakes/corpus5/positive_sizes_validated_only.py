# expect: mha-no-divisibility-check
# the constructor validates that both sizes are positive integers but never that num_heads divides d_model; d_k is just floored
"""Defensive-looking multi-head attention with input validation in ``__init__``.

Sizes are validated up front and the four weights are drawn from one
generator; the split uses ``np.split`` + ``np.stack``.
"""

import numbers

import numpy as np


def softmax(x):
    x = np.asarray(x)
    shifted = x - np.max(x, axis=-1, keepdims=True)
    e = np.exp(shifted)
    return e / np.sum(e, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    scores = Q @ K.swapaxes(-2, -1) / np.sqrt(d_k)
    weights = softmax(scores)
    return weights @ V, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        for name, value in (("d_model", d_model), ("num_heads", num_heads)):
            if not isinstance(value, numbers.Integral) or value <= 0:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
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
        # H equal column blocks, stacked on a new head axis
        return np.stack(np.split(x, self.num_heads, axis=-1), axis=1)

    def combine_heads(self, x):
        # iterate over the head axis and lay the blocks side by side again
        return np.concatenate(list(np.moveaxis(x, 1, 0)), axis=-1)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        ctx, weights = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(ctx) @ self.W_O
        if return_weights:
            return out, weights
        return out
