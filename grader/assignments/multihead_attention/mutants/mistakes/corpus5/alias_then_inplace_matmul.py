# expect: mha-mutates-input
# forward "copies" the inputs by plain assignment and then projects them with the in-place operator @=, which overwrites the caller's Q, K and V
"""Multi-head attention using NumPy's in-place matrix product (``@=``).

Projections are done in place on local names to avoid temporaries; the rest
of the layer is the usual reshape/transpose recipe.
"""

import numpy as np


def softmax(x):
    x = np.asarray(x)
    z = np.exp(x - x.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    w = softmax(scores)
    return w @ V, w


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("num_heads must divide d_model")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        sd = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, sd, (d_model, d_model))
        self.W_K = rng.normal(0.0, sd, (d_model, d_model))
        self.W_V = rng.normal(0.0, sd, (d_model, d_model))
        self.W_O = rng.normal(0.0, sd, (d_model, d_model))

    def split_heads(self, x):
        B, T, _ = x.shape
        return x.reshape(B, T, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        B, H, T, dk = x.shape
        return x.transpose(0, 2, 1, 3).reshape(B, T, H * dk)

    def forward(self, Q, K, V, return_weights=False):
        queries, keys, values = Q, K, V
        queries @= self.W_Q          # (B, T, D) stays (B, T, D), so do it in place
        q = self.split_heads(queries)
        keys @= self.W_K
        k = self.split_heads(keys)
        values @= self.W_V
        v = self.split_heads(values)
        ctx, w = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(ctx) @ self.W_O
        if return_weights:
            return out, w
        return out
