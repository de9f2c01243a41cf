# expect: mha-no-output-projection
# forward computes the W_O product into one variable but returns the other: the merged heads come back without the output projection.
"""Multi-head attention with one fused (D, 3D) query-key-value matrix.

The three projection matrices are concatenated into a fused matrix on every call;
self-attention does a single matmul and splits the result in three, while
cross-attention applies the matching column block of the fused matrix to each input.
"""

import numpy as np


def softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    scores = np.matmul(Q, np.swapaxes(K, -1, -2)) / np.sqrt(d_k)  # (B, H, T, S)
    weights = softmax(scores)
    return np.matmul(weights, V), weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError(f"num_heads ({num_heads}) must divide d_model ({d_model})")
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
        return x.reshape(b, t, self.num_heads, self.d_k).transpose(0, 2, 1, 3)  # (B, H, T, d_k)

    def combine_heads(self, x):
        b, h, t, d_k = x.shape
        return x.transpose(0, 2, 1, 3).reshape(b, t, h * d_k)  # (B, T, D)

    def forward(self, Q, K, V, return_weights=False):
        D = self.W_Q.shape[0]
        W_qkv = np.concatenate([self.W_Q, self.W_K, self.W_V], axis=1)  # (D, 3D)
        if Q is K and K is V:
            q, k, v = np.split(Q @ W_qkv, 3, axis=-1)  # three (B, T, D)
        else:
            q = Q @ W_qkv[:, :D]
            k = K @ W_qkv[:, D:2 * D]
            v = V @ W_qkv[:, 2 * D:]
        heads, weights = scaled_dot_product_attention(
            self.split_heads(q), self.split_heads(k), self.split_heads(v)
        )
        merged = self.combine_heads(heads)  # (B, T, D)
        mixed = merged @ self.W_O
        if return_weights:
            return merged, weights
        return merged
