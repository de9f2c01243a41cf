# expect: mha-kv-uses-query-length, softmax-global-max
# Two mistakes: forward stacks Q, K and V into one (3, B, T, D) array for a single batched projection, which requires K and V to have Q's length; and softmax shifts by the largest entry of the whole array.
"""Multi-head attention that projects its three inputs with one batched einsum.

The matrices are stacked to (3, D, D) and the inputs to (3, B, T, D), so one
einsum with explicit index strings does all three projections.
"""

import numpy as np


def softmax(x):
    e = np.exp(x - np.max(x))
    return e / np.sum(e, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    scores = np.einsum("bhtd,bhsd->bhts", Q, K) / np.sqrt(d_k)  # (B, H, T, S)
    weights = softmax(scores)
    out = np.einsum("bhts,bhsd->bhtd", weights, V)  # (B, H, T, d_k)
    return out, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")
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
        b, t, _ = x.shape
        return np.einsum("bthd->bhtd", x.reshape(b, t, self.num_heads, self.d_k))

    def combine_heads(self, x):
        b, h, t, d_k = x.shape
        return np.einsum("bhtd->bthd", x).reshape(b, t, h * d_k)

    def forward(self, Q, K, V, return_weights=False):
        W = np.stack([self.W_Q, self.W_K, self.W_V])  # (3, D, D)
        X = np.stack([Q, K, V])  # (3, B, T, D)
        P = np.einsum("nbtd,nde->nbte", X, W)  # (3, B, T, D)
        q, k, v = (self.split_heads(p) for p in P)
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = np.einsum("btd,de->bte", self.combine_heads(heads), self.W_O)
        if return_weights:
            return out, weights
        return out
