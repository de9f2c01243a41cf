# expect: softmax-unstable
# A Python loop with math.exp on every entry, no shift: math.exp raises OverflowError for large logits.
import math

import numpy as np


def softmax(x):
    x = np.asarray(x, dtype=float)
    out = np.empty_like(x)
    flat_in = x.reshape(-1, x.shape[-1])
    flat_out = out.reshape(-1, x.shape[-1])
    for i, row in enumerate(flat_in):
        e = [math.exp(v) for v in row]
        total = sum(e)
        flat_out[i] = [v / total for v in e]
    return out


def scaled_dot_product_attention(Q, K, V):
    B, H, T, d = Q.shape
    S = K.shape[2]
    weights = np.zeros((B, H, T, S))
    out = np.zeros((B, H, T, d))
    for b in range(B):
        for h in range(H):
            scores = Q[b, h] @ K[b, h].T / math.sqrt(d)
            weights[b, h] = softmax(scores)
            out[b, h] = weights[b, h] @ V[b, h]
    return out, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads:
            raise ValueError("num_heads must divide d_model")
        self.d_model, self.num_heads = d_model, num_heads
        self.W_Q = self.W_K = self.W_V = self.W_O = None

    def split_heads(self, x):
        d = self.d_model // self.num_heads
        return np.stack([x[:, :, i * d:(i + 1) * d] for i in range(self.num_heads)], axis=1)

    def combine_heads(self, x):
        return np.concatenate([x[:, i] for i in range(x.shape[1])], axis=-1)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(heads) @ self.W_O
        if return_weights:
            return out, weights
        return out
