# expect: mha-adds-residual, mha-mutates-input
# Two mistakes: forward adds the attention output to the query input, and does it with Q += out, so the caller's Q is overwritten and then returned.
"""Multi-head attention written to avoid temporary arrays.

Intermediate results are reused where possible, and the final sum is accumulated
with an augmented assignment instead of allocating a new output array.
"""

import numpy as np


def softmax(x):
    z = x - np.max(x, axis=-1, keepdims=True)
    np.exp(z, out=z)
    z /= np.sum(z, axis=-1, keepdims=True)
    return z


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    scores = np.matmul(Q, np.swapaxes(K, -1, -2))  # (B, H, T, S)
    scores /= np.sqrt(d_k)
    weights = softmax(scores)
    return np.matmul(weights, V), weights


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

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(heads) @ self.W_O
        Q += out
        if return_weights:
            return Q, weights
        return Q
