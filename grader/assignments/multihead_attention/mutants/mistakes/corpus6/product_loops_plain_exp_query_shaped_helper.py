# expect: softmax-unstable, combine-heads-no-transpose, mha-kv-uses-query-length
# softmax exponentiates the raw logits with no max shift (overflow/underflow to nan on large logits); combine_heads reshapes (B, H, T, d_k) straight to (B, T, D); forward's projection helper reshapes keys and values back with the query's length T.
import itertools

import numpy as np


def softmax(x):
    x = np.asarray(x)
    e = np.exp(x)
    return e / e.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    B, H, T, d = Q.shape
    S = K.shape[2]
    w = np.zeros((B, H, T, S))
    o = np.zeros((B, H, T, V.shape[3]))
    for b, h in itertools.product(range(B), range(H)):
        w[b, h] = softmax(np.dot(Q[b, h], K[b, h].T) / np.sqrt(d))
        o[b, h] = np.dot(w[b, h], V[b, h])
    return o, w


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("num_heads must divide d_model")
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
        B, T, _ = x.shape
        H, d = self.num_heads, self.d_k
        y = np.zeros((B, H, T, d))
        for b, h in itertools.product(range(B), range(H)):
            y[b, h] = x[b, :, h * d:(h + 1) * d]
        return y

    def combine_heads(self, x):
        B, H, T, d = x.shape
        return x.reshape(B, T, H * d)

    def forward(self, Q, K, V, return_weights=False):
        B, T, D = Q.shape

        def p(a, W):
            return np.dot(a.reshape(-1, D), W).reshape(B, T, D)

        q = self.split_heads(p(Q, self.W_Q))
        k = self.split_heads(p(K, self.W_K))
        v = self.split_heads(p(V, self.W_V))
        o, w = scaled_dot_product_attention(q, k, v)
        y = p(self.combine_heads(o), self.W_O)
        if return_weights:
            return y, w
        return y
