"""Multi-head attention written with np.einsum throughout."""

import numpy as np


def softmax(x):
    peak = x.max(axis=-1, keepdims=True)
    weights = np.exp(x - peak)
    return weights / weights.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    scores = np.einsum("bhtd,bhsd->bhts", Q, K) / np.sqrt(d_k)  # (B, H, T, S)
    weights = softmax(scores)
    out = np.einsum("bhts,bhsd->bhtd", weights, V)  # (B, H, T, d_k)
    return out, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads:
            raise ValueError("num_heads must divide d_model")
        self.d_model, self.num_heads, self.d_k = d_model, num_heads, d_model // num_heads
        rng = np.random.default_rng(1)
        self.W_Q, self.W_K, self.W_V, self.W_O = (rng.normal(size=(d_model, d_model)) for _ in range(4))

    def split_heads(self, x):
        B, T, _ = x.shape
        return np.einsum("bthd->bhtd", x.reshape(B, T, self.num_heads, self.d_k))

    def combine_heads(self, x):
        B, H, T, d_k = x.shape
        return np.einsum("bhtd->bthd", x).reshape(B, T, H * d_k)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(np.einsum("btd,de->bte", Q, self.W_Q))
        k = self.split_heads(np.einsum("bsd,de->bse", K, self.W_K))
        v = self.split_heads(np.einsum("bsd,de->bse", V, self.W_V))
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = np.einsum("btd,de->bte", self.combine_heads(heads), self.W_O)
        return (out, weights) if return_weights else out
