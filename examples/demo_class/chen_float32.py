"""Computes everything in float32, to save memory."""

import numpy as np


def softmax(x):
    x = np.asarray(x, dtype=np.float32)
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    Q, K, V = (np.asarray(a, dtype=np.float32) for a in (Q, K, V))
    scores = Q @ K.transpose(0, 1, 3, 2) / np.float32(np.sqrt(Q.shape[-1]))
    weights = softmax(scores)
    return weights @ V, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError(f"{num_heads} heads cannot share {d_model} features")
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(3)
        self.W_Q = rng.standard_normal((d_model, d_model)).astype(np.float32)
        self.W_K = rng.standard_normal((d_model, d_model)).astype(np.float32)
        self.W_V = rng.standard_normal((d_model, d_model)).astype(np.float32)
        self.W_O = rng.standard_normal((d_model, d_model)).astype(np.float32)

    def split_heads(self, x):
        x = np.asarray(x, dtype=np.float32)
        B, T, _ = x.shape
        return x.reshape(B, T, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        B, H, T, d_k = x.shape
        return np.asarray(x, dtype=np.float32).transpose(0, 2, 1, 3).reshape(B, T, H * d_k)

    def forward(self, Q, K, V, return_weights=False):
        W_Q, W_K, W_V, W_O = (np.asarray(W, dtype=np.float32) for W in (self.W_Q, self.W_K, self.W_V, self.W_O))
        out, weights = scaled_dot_product_attention(
            self.split_heads(Q @ W_Q), self.split_heads(K @ W_K), self.split_heads(V @ W_V))
        out = self.combine_heads(out) @ W_O
        return (out, weights) if return_weights else out
