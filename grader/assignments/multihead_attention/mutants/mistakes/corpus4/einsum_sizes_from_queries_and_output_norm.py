# expect: mha-kv-uses-query-length, mha-adds-layer-norm
# Two mistakes: forward unpacks B and T from Q once and its head-cutting helper uses them for the keys and values too; and forward standardises its output over the model width.
"""Multi-head attention written with np.einsum and explicit index strings.

forward reads the sizes once at the top and cuts every projected input into heads
with a local helper built on an einsum that moves the head axis; the last step
standardises each output vector, with the mean and variance also taken by einsum.
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
        return np.einsum("bhtd->bthd", x).reshape(b, t, h * d_k)  # (B, T, D)

    def forward(self, Q, K, V, return_weights=False):
        B, T, D = Q.shape
        H, d_k = self.num_heads, self.d_k

        def heads(a):
            return np.einsum("bthd->bhtd", a.reshape(B, T, H, d_k))

        q = heads(np.einsum("btd,de->bte", Q, self.W_Q))
        k = heads(np.einsum("btd,de->bte", K, self.W_K))
        v = heads(np.einsum("btd,de->bte", V, self.W_V))
        ctx, weights = scaled_dot_product_attention(q, k, v)
        out = np.einsum("btd,de->bte", self.combine_heads(ctx), self.W_O)
        mu = np.einsum("btd->bt", out)[..., None] / D
        centred = out - mu
        var = np.einsum("btd,btd->bt", centred, centred)[..., None] / D
        out = centred / np.sqrt(var + 1e-6)
        if return_weights:
            return out, weights
        return out
