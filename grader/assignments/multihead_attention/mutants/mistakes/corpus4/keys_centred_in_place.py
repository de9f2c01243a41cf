# expect: mha-mutates-input
# forward centres the keys over the sequence with K -= K.mean(...), which leaves the attention unchanged but overwrites the caller's K.
"""Multi-head attention that recentres the keys before scoring them.

Softmax does not change when a whole row of scores is shifted, and subtracting
the mean key from every key shifts each query's scores by one constant, so the
keys are centred over the sequence axis first to keep the scores small.
"""

import numpy as np


def softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    scores = np.matmul(Q, np.swapaxes(K, -1, -2)) / np.sqrt(d_k)  # (B, H, T, S)
    weights = softmax(scores)
    return np.matmul(weights, V), weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")
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
        b, t, _ = x.shape
        return x.reshape(b, t, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        b, h, t, d_k = x.shape
        return x.transpose(0, 2, 1, 3).reshape(b, t, h * d_k)

    def forward(self, Q, K, V, return_weights=False):
        K -= K.mean(axis=1, keepdims=True)  # mean key over S
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(heads) @ self.W_O
        if return_weights:
            return out, weights
        return out
