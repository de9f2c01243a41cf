# expect: attention-returns-scores, split-heads-no-transpose
# Two mistakes: scaled_dot_product_attention returns the scaled scores array (before softmax) as the weights, and split_heads reshapes (B, T, D) straight to (B, H, T, d_k) with no transpose.
"""Multi-head attention with explicit loops into preallocated arrays."""

import numpy as np


def softmax(x):
    """Stable softmax over the last axis."""
    mx = x.max(axis=-1, keepdims=True)
    ex = np.exp(x - mx)
    return ex / ex.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    B, H, T, d_k = Q.shape
    S = K.shape[2]
    attn = np.empty((B, H, T, S))
    out = np.empty((B, H, T, V.shape[-1]))
    for b in range(B):
        for h in range(H):
            attn[b, h] = np.dot(Q[b, h], K[b, h].T) / np.sqrt(d_k)
            probs = softmax(attn[b, h])
            out[b, h] = np.dot(probs, V[b, h])
    return out, attn


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError(f"{d_model} is not divisible by {num_heads}")
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
        B, T, D = x.shape
        return x.reshape(B, self.num_heads, T, self.d_k)

    def combine_heads(self, x):
        B, H, T, d_k = x.shape
        out = np.empty((B, T, H * d_k))
        for h in range(H):
            out[:, :, h * d_k:(h + 1) * d_k] = x[:, h]
        return out

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        heads, attn = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(heads) @ self.W_O
        if return_weights:
            return out, attn
        return out
