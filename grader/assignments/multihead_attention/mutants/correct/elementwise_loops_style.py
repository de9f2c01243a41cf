# expect: correct
# Python loops over every element: no matmul, reshape or transpose anywhere (slow, but right).
import math

import numpy as np


def softmax(x):
    x = np.asarray(x, dtype=float)
    out = np.zeros(x.shape)
    width = x.shape[-1]
    for index in np.ndindex(*x.shape[:-1]):
        largest = -math.inf
        for j in range(width):
            if x[index + (j,)] > largest:
                largest = x[index + (j,)]
        total = 0.0
        for j in range(width):
            value = math.exp(x[index + (j,)] - largest) if x[index + (j,)] != -math.inf else 0.0
            out[index + (j,)] = value
            total += value
        for j in range(width):
            out[index + (j,)] = out[index + (j,)] / total
    return out


def _matmul(a, b):
    """(n, m) times (m, p), one product at a time."""
    rows, inner, columns = a.shape[0], a.shape[1], b.shape[1]
    out = np.zeros((rows, columns))
    for i in range(rows):
        for j in range(columns):
            total = 0.0
            for k in range(inner):
                total += a[i, k] * b[k, j]
            out[i, j] = total
    return out


def scaled_dot_product_attention(Q, K, V):
    B, H, T, d = Q.shape
    S = K.shape[2]
    scores = np.zeros((B, H, T, S))
    for b in range(B):
        for h in range(H):
            for t in range(T):
                for s in range(S):
                    total = 0.0
                    for k in range(d):
                        total += Q[b, h, t, k] * K[b, h, s, k]
                    scores[b, h, t, s] = total / math.sqrt(d)
    weights = softmax(scores)
    out = np.zeros((B, H, T, d))
    for b in range(B):
        for h in range(H):
            for t in range(T):
                for k in range(d):
                    total = 0.0
                    for s in range(S):
                        total += weights[b, h, t, s] * V[b, h, s, k]
                    out[b, h, t, k] = total
    return out, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("num_heads must divide d_model")
        self.d_model, self.num_heads, self.d_k = d_model, num_heads, d_model // num_heads
        self.W_Q = self.W_K = self.W_V = self.W_O = np.eye(d_model)

    def split_heads(self, x):
        B, T, _ = x.shape
        out = np.zeros((B, self.num_heads, T, self.d_k))
        for b in range(B):
            for h in range(self.num_heads):
                for t in range(T):
                    for k in range(self.d_k):
                        out[b, h, t, k] = x[b, t, h * self.d_k + k]
        return out

    def combine_heads(self, x):
        B, H, T, d_k = x.shape
        out = np.zeros((B, T, H * d_k))
        for b in range(B):
            for h in range(H):
                for t in range(T):
                    for k in range(d_k):
                        out[b, t, h * d_k + k] = x[b, h, t, k]
        return out

    def _project(self, x, W):
        return np.stack([_matmul(x[b], W) for b in range(x.shape[0])])

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(self._project(Q, self.W_Q))
        k = self.split_heads(self._project(K, self.W_K))
        v = self.split_heads(self._project(V, self.W_V))
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = self._project(self.combine_heads(heads), self.W_O)
        if return_weights:
            return out, weights
        return out
