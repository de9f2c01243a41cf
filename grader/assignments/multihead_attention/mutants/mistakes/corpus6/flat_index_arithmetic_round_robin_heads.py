# expect: split-heads-interleaved, attention-mutates-input
# split_heads reads feature k*H + h for head h (round-robin) instead of h*d_k + k; scaled_dot_product_attention divides the caller's Q by sqrt(d_k) in place to "scale once".
import math

import numpy as np


def softmax(x):
    a = np.ascontiguousarray(x, dtype=np.float64)
    n = a.shape[-1]
    rows = a.size // n if n else 0
    src = a.reshape(-1)
    dst = np.empty(a.size)
    for r in range(rows):
        base = r * n
        m = src[base]
        for j in range(1, n):
            if src[base + j] > m:
                m = src[base + j]
        total = 0.0
        for j in range(n):
            dst[base + j] = math.exp(src[base + j] - m)
            total += dst[base + j]
        for j in range(n):
            dst[base + j] /= total
    return dst.reshape(a.shape)


def scaled_dot_product_attention(Q, K, V):
    B, H, T, DK = Q.shape
    S = K.shape[2]
    DV = V.shape[3]
    Q /= math.sqrt(DK)          # scale the queries once, not every score
    sc = np.zeros((B, H, T, S))
    for b in range(B):
        for h in range(H):
            for i in range(T):
                for j in range(S):
                    acc = 0.0
                    for d in range(DK):
                        acc += Q[b, h, i, d] * K[b, h, j, d]
                    sc[b, h, i, j] = acc
    p = softmax(sc)
    o = np.zeros((B, H, T, DV))
    for b in range(B):
        for h in range(H):
            for i in range(T):
                for d in range(DV):
                    acc = 0.0
                    for j in range(S):
                        acc += p[b, h, i, j] * V[b, h, j, d]
                    o[b, h, i, d] = acc
    return o, p


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model % num_heads != 0")
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
        H, DK = self.num_heads, self.d_k
        flat = np.ascontiguousarray(x).reshape(-1)
        out = np.empty(B * H * T * DK)
        for b in range(B):
            for h in range(H):
                for t in range(T):
                    for k in range(DK):
                        out[((b * H + h) * T + t) * DK + k] = flat[(b * T + t) * D + k * H + h]
        return out.reshape(B, H, T, DK)

    def combine_heads(self, x):
        B, H, T, DK = x.shape
        D = H * DK
        flat = np.ascontiguousarray(x).reshape(-1)
        out = np.empty(B * T * D)
        for b in range(B):
            for t in range(T):
                for h in range(H):
                    for k in range(DK):
                        out[(b * T + t) * D + h * DK + k] = flat[((b * H + h) * T + t) * DK + k]
        return out.reshape(B, T, D)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(np.dot(Q, self.W_Q))
        k = self.split_heads(np.dot(K, self.W_K))
        v = self.split_heads(np.dot(V, self.W_V))
        o, p = scaled_dot_product_attention(q, k, v)
        y = np.dot(self.combine_heads(o), self.W_O)
        if return_weights:
            return y, p
        return y
