# expect: attention-wrong-scale
# The scale is written d_k ** 1/2, which Python reads as (d_k ** 1) / 2: the scores are divided by 2 * d_k.
"""Multi-head attention ported from a Chinese course notebook: np.errstate turns any overflow in the softmax
into an error, projections go through np.dot, and the heads through np.reshape / np.transpose."""

import numpy as np


def softmax(x):
    x = np.asarray(x, dtype=float)
    # 先减去每行的最大值，指数最大为 exp(0) = 1，不会溢出。
    # If this ever overflowed, errstate would raise instead of handing back nan.
    with np.errstate(over="raise", invalid="raise"):
        shifted = x - np.max(x, axis=-1, keepdims=True)
        e = np.exp(shifted)
        return e / np.sum(e, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    # K 只交换最后两个轴：(B, H, S, d_k) -> (B, H, d_k, S)
    K_t = np.transpose(K, (0, 1, 3, 2))
    scores = np.matmul(Q, K_t) / d_k ** 1/2  # (B, H, T, S), divided by sqrt(d_k)
    weights = softmax(scores)  # each row sums to 1 over the S keys
    return np.matmul(weights, V), weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        # the heads must share the model width evenly
        if d_model % num_heads:
            raise ValueError("d_model (%d) must be divisible by num_heads (%d)" % (d_model, num_heads))
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        sigma = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, sigma, (d_model, d_model))
        self.W_K = rng.normal(0.0, sigma, (d_model, d_model))
        self.W_V = rng.normal(0.0, sigma, (d_model, d_model))
        self.W_O = rng.normal(0.0, sigma, (d_model, d_model))

    def split_heads(self, x):
        b, t, _ = np.shape(x)
        x = np.reshape(x, (b, t, self.num_heads, self.d_k))  # (B, T, H, d_k)
        return np.transpose(x, (0, 2, 1, 3))  # (B, H, T, d_k)

    def combine_heads(self, x):
        b, h, t, d = np.shape(x)
        x = np.transpose(x, (0, 2, 1, 3))  # (B, T, H, d_k)
        return np.reshape(x, (b, t, h * d))  # (B, T, D)

    def forward(self, Q, K, V, return_weights=False):
        # np.dot on a (B, T, D) array and a (D, D) matrix contracts the feature axis
        q = self.split_heads(np.dot(Q, self.W_Q))
        k = self.split_heads(np.dot(K, self.W_K))
        v = self.split_heads(np.dot(V, self.W_V))
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = np.dot(self.combine_heads(heads), self.W_O)  # (B, T, D)
        return (out, weights) if return_weights else out
