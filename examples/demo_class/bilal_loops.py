"""Multi-head attention with explicit loops over batch entries and heads."""

import math

import numpy as np


def softmax(x):
    x = np.asarray(x, dtype=float)
    result = np.empty_like(x)
    flat_in = x.reshape(-1, x.shape[-1])
    flat_out = result.reshape(-1, x.shape[-1])
    for row in range(flat_in.shape[0]):
        shifted = flat_in[row] - flat_in[row].max()
        exps = np.exp(shifted)
        flat_out[row] = exps / exps.sum()
    return result


def scaled_dot_product_attention(Q, K, V):
    B, H, T, d_k = Q.shape
    S = K.shape[2]
    out = np.zeros((B, H, T, V.shape[-1]))
    weights = np.zeros((B, H, T, S))
    for b in range(B):
        for h in range(H):
            scores = Q[b, h] @ K[b, h].T / math.sqrt(d_k)  # (T, S)
            weights[b, h] = softmax(scores)
            out[b, h] = weights[b, h] @ V[b, h]
    return out, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        assert d_model % num_heads == 0, "d_model must be a multiple of num_heads"
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.W_Q = np.eye(d_model)
        self.W_K = np.eye(d_model)
        self.W_V = np.eye(d_model)
        self.W_O = np.eye(d_model)

    def split_heads(self, x):
        B, T, D = x.shape
        out = np.zeros((B, self.num_heads, T, self.d_k))
        for h in range(self.num_heads):
            out[:, h] = x[:, :, h * self.d_k:(h + 1) * self.d_k]
        return out

    def combine_heads(self, x):
        return np.concatenate([x[:, h] for h in range(x.shape[1])], axis=-1)

    def forward(self, Q, K, V, return_weights=False):
        heads, weights = scaled_dot_product_attention(
            self.split_heads(Q @ self.W_Q), self.split_heads(K @ self.W_K), self.split_heads(V @ self.W_V))
        out = self.combine_heads(heads) @ self.W_O
        if return_weights:
            return out, weights
        return out
