# expect: attention-wrong-value-product, mha-kv-uses-query-length
# Two mistakes: the attention output sums the broadcast weights*values product over axis -3 (the queries) instead of -2 (the keys), and forward flattens K and V into B*T rows using the query's length T.
"""Multi-head attention with broadcasting instead of matmul where I can,
and 2-D matrix products on flattened rows for the projections."""

import numpy as np


def softmax(x):
    """Stable softmax along the last axis."""
    z = x - np.max(x, axis=-1, keepdims=True)
    p = np.exp(z)
    p /= np.sum(p, axis=-1, keepdims=True)
    return p


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    # (B, H, T, 1, d_k) * (B, H, 1, S, d_k) summed over d_k -> (B, H, T, S)
    scores = np.sum(Q[:, :, :, None, :] * K[:, :, None, :, :], axis=-1) / np.sqrt(d_k)
    weights = softmax(scores)
    # (B, H, T, S, 1) * (B, H, 1, S, d_k) -> weighted values, then add them up
    out = np.sum(weights[..., None] * V[:, :, None, :, :], axis=-3)
    return out, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model has to be a multiple of num_heads")
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
        return x.reshape(B, T, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        B, H, T, d_k = x.shape
        return x.transpose(0, 2, 1, 3).reshape(B, T, H * d_k)

    def forward(self, Q, K, V, return_weights=False):
        B, T, D = Q.shape
        # project all positions at once as one (B*T, D) @ (D, D) product
        q = (Q.reshape(B * T, D) @ self.W_Q).reshape(B, T, D)
        k = (K.reshape(B * T, D) @ self.W_K).reshape(B, T, D)
        v = (V.reshape(B * T, D) @ self.W_V).reshape(B, T, D)
        ctx, weights = scaled_dot_product_attention(
            self.split_heads(q), self.split_heads(k), self.split_heads(v))
        out = (self.combine_heads(ctx).reshape(B * T, D) @ self.W_O).reshape(B, T, D)
        if return_weights:
            return out, weights
        return out
