# expect: mha-ignores-key-value
# forward hands only Q to an older self_attention method, so the K and V arguments are never read.
"""Multi-head attention that grew from a self-attention layer.

The layer was first written as self_attention(x) for one input sequence; forward
and __call__ were added later around it with the three-argument signature.
"""

import numpy as np


def softmax(x):
    x_max = np.max(x, axis=-1, keepdims=True)
    e = np.exp(x - x_max)
    return e / np.sum(e, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    scores = Q @ K.swapaxes(-1, -2) / np.sqrt(d_k)  # (B, H, T, S)
    weights = softmax(scores)
    return weights @ V, weights


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
        return x.reshape(b, t, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        b, h, t, d_k = x.shape
        return x.transpose(0, 2, 1, 3).reshape(b, t, h * d_k)

    def self_attention(self, x, return_weights=False):
        """Attention of a (B, T, D) sequence over itself."""
        q = self.split_heads(x @ self.W_Q)
        k = self.split_heads(x @ self.W_K)
        v = self.split_heads(x @ self.W_V)
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(heads) @ self.W_O
        if return_weights:
            return out, weights
        return out

    def forward(self, Q, K, V, return_weights=False):
        return self.self_attention(Q, return_weights=return_weights)

    def __call__(self, Q, K, V, return_weights=False):
        return self.forward(Q, K, V, return_weights=return_weights)
