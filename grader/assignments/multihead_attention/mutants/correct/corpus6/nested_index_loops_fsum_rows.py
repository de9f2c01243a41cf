# expect: correct
# Written like a C program: every sum is an explicit loop over indices, rows reduced with math.fsum; no mistakes.
import math

import numpy as np


def softmax(x):
    a = np.asarray(x, dtype=np.float64)
    y = np.empty(a.shape, dtype=np.float64)
    n = a.shape[-1]
    for idx in np.ndindex(*a.shape[:-1]):
        row = a[idx]
        mx = row[0]
        for j in range(1, n):
            if row[j] > mx:
                mx = row[j]
        e = [0.0] * n
        for j in range(n):
            e[j] = math.exp(row[j] - mx)   # row[j] - mx <= 0, and exp(-inf) is 0.0
        tot = math.fsum(e)
        for j in range(n):
            y[idx + (j,)] = e[j] / tot
    return y


def scaled_dot_product_attention(Q, K, V):
    B, H, T, dk = Q.shape
    S = K.shape[2]
    denom = math.sqrt(dk)
    scores = np.zeros((B, H, T, S))
    for b in range(B):
        for h in range(H):
            for i in range(T):
                for j in range(S):
                    acc = [Q[b, h, i, k] * K[b, h, j, k] for k in range(dk)]
                    scores[b, h, i, j] = math.fsum(acc) / denom
    w = softmax(scores)
    out = np.zeros((B, H, T, V.shape[3]))
    for b in range(B):
        for h in range(H):
            for i in range(T):
                for k in range(V.shape[3]):
                    out[b, h, i, k] = math.fsum(w[b, h, i, j] * V[b, h, j, k] for j in range(S))
    return out, w


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if num_heads <= 0 or d_model % num_heads != 0:
            raise ValueError("num_heads must divide d_model (got %d and %d)" % (d_model, num_heads))
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
        H, dk = self.num_heads, self.d_k
        y = np.empty((B, H, T, dk), dtype=np.result_type(x, np.float64))
        for b in range(B):
            for h in range(H):
                for t in range(T):
                    for k in range(dk):
                        y[b, h, t, k] = x[b, t, h * dk + k]
        return y

    def combine_heads(self, x):
        B, H, T, dk = x.shape
        y = np.empty((B, T, H * dk), dtype=np.result_type(x, np.float64))
        for b in range(B):
            for t in range(T):
                for h in range(H):
                    for k in range(dk):
                        y[b, t, h * dk + k] = x[b, h, t, k]
        return y

    @staticmethod
    def _matvec_rows(x, W):
        # y[b, t, c] = sum_r x[b, t, r] * W[r, c]
        B, T, D = x.shape
        y = np.zeros((B, T, W.shape[1]))
        for b in range(B):
            for t in range(T):
                for c in range(W.shape[1]):
                    y[b, t, c] = math.fsum(x[b, t, r] * W[r, c] for r in range(D))
        return y

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(self._matvec_rows(Q, self.W_Q))
        k = self.split_heads(self._matvec_rows(K, self.W_K))
        v = self.split_heads(self._matvec_rows(V, self.W_V))
        ctx, w = scaled_dot_product_attention(q, k, v)
        out = self._matvec_rows(self.combine_heads(ctx), self.W_O)
        if return_weights:
            return out, w
        return out
