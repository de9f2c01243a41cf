# expect: attention-no-scale, mha-wrong-weights-returned
"""Einsum throughout; the attention maps are handed back head-major for plotting.

Two slips: the scores are never divided by sqrt(d_k), and forward returns the
weights as (H, B, T, S), heads ahead of the batch, "so maps[h] is one head".
"""

import numpy as np


def softmax(x):
    z = x - x.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    logits = np.einsum("bhqd,bhkd->bhqk", Q, K)
    p = softmax(logits)
    return np.einsum("bhqk,bhkd->bhqd", p, V), p


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads:
            raise ValueError("num_heads must divide d_model")
        self.d_model, self.num_heads = d_model, num_heads
        self.d_k = d_model // num_heads
        g = np.random.default_rng(7)
        self.W_Q, self.W_K, self.W_V, self.W_O = (g.standard_normal((d_model, d_model)) / np.sqrt(d_model)
                                                  for _ in range(4))

    def split_heads(self, x):
        b, t, _ = x.shape
        return np.einsum("bthd->bhtd", x.reshape(b, t, self.num_heads, self.d_k))

    def combine_heads(self, x):
        b, h, t, d = x.shape
        return np.einsum("bhtd->bthd", x).reshape(b, t, h * d)

    def forward(self, Q, K, V, return_weights=False):
        q, k, v = (self.split_heads(np.einsum("btd,de->bte", x, w))
                   for x, w in ((Q, self.W_Q), (K, self.W_K), (V, self.W_V)))
        heads, maps = scaled_dot_product_attention(q, k, v)
        out = np.einsum("btd,de->bte", self.combine_heads(heads), self.W_O)
        if return_weights:
            return out, np.einsum("bhqk->hbqk", maps)  # maps[h] is head h
        return out
