# expect: attention-mutates-input
# Batch and heads are folded by assigning to Q.shape, K.shape and V.shape, which reshapes the caller's arrays for good.
"""Multi-head attention whose softmax lays all rows end to end and reduces them with np.maximum.reduceat and
np.add.reduceat, and whose score product uses np.matmul's axes= argument in place of an explicit transpose."""

import numpy as np


def softmax(x):
    x = np.asarray(x)
    n = x.shape[-1]
    flat = x.reshape(-1)  # rows laid end to end (a copy if x was not contiguous)
    starts = np.arange(0, flat.size, n)  # where each row begins
    row_max = np.maximum.reduceat(flat, starts)  # one per row
    e = np.exp(flat - np.repeat(row_max, n))
    row_sum = np.add.reduceat(e, starts)
    return (e / np.repeat(row_sum, n)).reshape(x.shape)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    lead = Q.shape[:-2]  # (B, H)
    # One stack of matrices instead of a (B, H) grid; setting .shape never copies.
    Q.shape = (-1,) + Q.shape[-2:]  # (B * H, T, d_k)
    K.shape = (-1,) + K.shape[-2:]  # (B * H, S, d_k)
    V.shape = (-1,) + V.shape[-2:]  # (B * H, S, d_k)
    # matmul's core dimensions are (n, k), (k, m) -> (n, m). For K the contracted
    # k is its last axis (d_k) and m its second-to-last (S): axes (-1, -2).
    scores = np.matmul(Q, K, axes=[(-2, -1), (-1, -2), (-2, -1)]) / np.sqrt(d_k)  # (B * H, T, S)
    weights = softmax(scores)
    out = np.matmul(weights, V)  # (B * H, T, d_k)
    return out.reshape(lead + out.shape[-2:]), weights.reshape(lead + weights.shape[-2:])


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError(f"d_model must be a multiple of num_heads ({d_model} vs {num_heads})")
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
        B, T = x.shape[:2]
        return np.ascontiguousarray(x.reshape(B, T, self.num_heads, self.d_k).transpose(0, 2, 1, 3))

    def combine_heads(self, x):
        B, H, T, d_k = x.shape
        return np.ascontiguousarray(x.transpose(0, 2, 1, 3)).reshape(B, T, H * d_k)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(np.matmul(Q, self.W_Q))
        k = self.split_heads(np.matmul(K, self.W_K))
        v = self.split_heads(np.matmul(V, self.W_V))
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = np.matmul(self.combine_heads(heads), self.W_O)
        return (out, weights) if return_weights else out
