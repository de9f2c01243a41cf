# expect: correct
"""Multi-head attention the way it is first written by hand: loops over batch, heads and positions, heads picked by index lists."""

import math

import numpy as np


def softmax(x):
    x = np.asarray(x, dtype=float)
    rows = x.reshape(-1, x.shape[-1])  # (R, N)
    out = np.empty_like(rows)
    for i, row in enumerate(rows):
        e = np.exp(row - row.max())
        out[i] = e / e.sum()
    return out.reshape(x.shape)


def scaled_dot_product_attention(Q, K, V):
    B, H, T, d_k = Q.shape
    S = K.shape[2]
    scale = 1.0 / math.sqrt(d_k)
    weights = np.zeros((B, H, T, S))
    out = np.zeros((B, H, T, V.shape[3]))
    for b in range(B):
        for h in range(H):
            for t in range(T):
                logits = np.array([np.dot(Q[b, h, t], K[b, h, s]) for s in range(S)]) * scale
                w = softmax(logits)
                weights[b, h, t] = w
                out[b, h, t] = w @ V[b, h]
    return out, weights


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
        heads = []
        for h in range(self.num_heads):
            cols = list(range(h * self.d_k, (h + 1) * self.d_k))
            heads.append(x[:, :, cols])  # (B, T, d_k)
        return np.stack(heads, axis=1)  # (B, H, T, d_k)

    def combine_heads(self, x):
        return np.concatenate([x[:, h] for h in range(x.shape[1])], axis=-1)  # (B, T, D)

    def forward(self, Q, K, V, return_weights=False):
        outs, maps = [], []
        for b in range(Q.shape[0]):
            q = self.split_heads((Q[b] @ self.W_Q)[None])
            k = self.split_heads((K[b] @ self.W_K)[None])
            v = self.split_heads((V[b] @ self.W_V)[None])
            heads, w = scaled_dot_product_attention(q, k, v)
            outs.append(self.combine_heads(heads)[0] @ self.W_O)
            maps.append(w[0])
        out = np.stack(outs)
        if return_weights:
            return out, np.stack(maps)
        return out
