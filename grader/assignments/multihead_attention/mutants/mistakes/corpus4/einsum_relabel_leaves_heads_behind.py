# expect: split-heads-wrong-axes
# split_heads' einsum names the reshaped (B, T, H, d_k) axes "bhtd" on both sides, so nothing moves and the result stays (B, T, H, d_k).
"""Multi-head attention written with np.einsum and explicit index strings, sizes as properties.

Projections, scores, the value average and the head moves are all einsum calls.
The head width is a read-only property derived from the two sizes.
"""

import numpy as np


def softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.einsum("...n->...", e)[..., None]


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    scores = np.einsum("bhtd,bhsd->bhts", Q, K) / np.sqrt(d_k)  # (B, H, T, S)
    weights = softmax(scores)
    return np.einsum("bhts,bhsd->bhtd", weights, V), weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")
        self.d_model = d_model
        self.num_heads = num_heads
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, scale, (d_model, d_model))
        self.W_K = rng.normal(0.0, scale, (d_model, d_model))
        self.W_V = rng.normal(0.0, scale, (d_model, d_model))
        self.W_O = rng.normal(0.0, scale, (d_model, d_model))

    @property
    def d_k(self):
        return self.d_model // self.num_heads

    def split_heads(self, x):
        b, t, _ = x.shape
        blocks = x.reshape(b, t, self.num_heads, self.d_k)
        return np.einsum("bhtd->bhtd", blocks)

    def combine_heads(self, x):
        b, h, t, d_k = x.shape
        return np.einsum("bhtd->bthd", x).reshape(b, t, h * d_k)  # (B, T, D)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(np.einsum("btd,de->bte", Q, self.W_Q))
        k = self.split_heads(np.einsum("bsd,de->bse", K, self.W_K))
        v = self.split_heads(np.einsum("bsd,de->bse", V, self.W_V))
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = np.einsum("btd,de->bte", self.combine_heads(heads), self.W_O)
        if return_weights:
            return out, weights
        return out
