# expect: softmax-unstable, attention-wrong-scale
# Two mistakes on one path: softmax exponentiates the logits as they are (no shift), and attention
# divides the scores by the head width d_k instead of its square root.
"""A port with explicit shape bookkeeping: every array's axes written out, transposes with
np.permute_dims, the projections as np.matmul."""

import numpy as np


def softmax(x):
    powers = np.exp(x)  # fine for the small scores of the examples
    return powers / powers.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    keys_t = np.permute_dims(K, (*range(K.ndim - 2), K.ndim - 1, K.ndim - 2))  # (..., d_k, S)
    weights = softmax(np.matmul(Q, keys_t) / d_k)
    return np.matmul(weights, V), weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError(f"{d_model} features cannot be shared by {num_heads} heads")
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
        batch, length, _ = x.shape
        grid = np.reshape(x, (batch, length, self.num_heads, self.d_k))  # (B, T, H, d_k)
        return np.permute_dims(grid, (0, 2, 1, 3))  # (B, H, T, d_k)

    def combine_heads(self, x):
        batch, heads, length, d_k = x.shape
        return np.reshape(np.permute_dims(x, (0, 2, 1, 3)), (batch, length, heads * d_k))

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(np.matmul(Q, self.W_Q))
        k = self.split_heads(np.matmul(K, self.W_K))
        v = self.split_heads(np.matmul(V, self.W_V))
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = np.matmul(self.combine_heads(heads), self.W_O)
        return (out, weights) if return_weights else out
