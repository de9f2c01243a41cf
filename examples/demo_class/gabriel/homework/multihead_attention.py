"""Reshapes straight into heads and back, without moving the head axis."""

import numpy as np


def softmax(x):
    shifted = x - np.max(x, axis=-1, keepdims=True)
    e = np.exp(shifted)
    return e / np.sum(e, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    weights = softmax(scores)
    return weights @ V, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("num_heads must divide d_model")
        self.num_heads, self.d_k = num_heads, d_model // num_heads
        self.W_Q = self.W_K = self.W_V = self.W_O = np.eye(d_model)

    def split_heads(self, x):
        B, T, _ = x.shape
        return x.reshape(B, self.num_heads, T, self.d_k)  # mixes positions across heads

    def combine_heads(self, x):
        B, H, T, d_k = x.shape
        return x.reshape(B, T, H * d_k)

    def forward(self, Q, K, V, return_weights=False):
        out, weights = scaled_dot_product_attention(
            self.split_heads(Q @ self.W_Q), self.split_heads(K @ self.W_K), self.split_heads(V @ self.W_V))
        out = self.combine_heads(out) @ self.W_O
        return (out, weights) if return_weights else out
