# expect: mha-no-divisibility-check, mha-wrong-projection
# Two mistakes: the constructor only refuses an odd d_model with an even number of heads (so 10 with 4 heads passes), and the values are projected with W_K, a copy of the key line.
"""Multi-head attention with the three input projections done in one generator expression.

The inputs and their matrices are listed as pairs and projected and split in a
single pass; the constructor guards the sizes with a short rule of thumb.
"""

import numpy as np


def softmax(x):
    shifted = x - np.max(x, axis=-1, keepdims=True)
    e = np.exp(shifted)
    return e / np.sum(e, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)  # (B, H, T, S)
    weights = softmax(scores)
    return weights @ V, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % 2 == 1 and num_heads % 2 == 0:
            raise ValueError(f"an odd d_model ({d_model}) cannot be split into an even number of heads ({num_heads})")
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
        return x.reshape(b, t, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        b, h, t, d_k = x.shape
        return x.transpose(0, 2, 1, 3).reshape(b, t, h * d_k)

    def forward(self, Q, K, V, return_weights=False):
        pairs = ((Q, self.W_Q), (K, self.W_K), (V, self.W_K))
        q, k, v = (self.split_heads(x @ W) for x, W in pairs)
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(heads) @ self.W_O
        if return_weights:
            return out, weights
        return out
