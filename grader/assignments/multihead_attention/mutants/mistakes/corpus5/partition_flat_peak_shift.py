# expect: softmax-global-max
# softmax shifts by the largest entry of the whole (flattened) array, found with np.partition on x.ravel(), instead of each row's own max; rows far below the global max underflow to 0/0
"""Blog-post multi-head attention with a ``typing.NamedTuple`` config.

The layer's sizes are kept in an immutable ``AttentionConfig``; the softmax
finds its shift with ``np.partition`` rather than ``max``.
"""

from typing import NamedTuple

import numpy as np


class AttentionConfig(NamedTuple):
    d_model: int
    num_heads: int

    @property
    def d_k(self):
        return self.d_model // self.num_heads


def softmax(x):
    x = np.asarray(x)
    flat = x.ravel()
    # partition is O(n) -- cheaper than sorting just to find the biggest value
    biggest = np.partition(flat, flat.size - 1)[-1]
    e = np.exp(x - biggest)
    return e / e.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    scale = Q.shape[-1] ** -0.5
    weights = softmax(np.matmul(Q, np.swapaxes(K, -2, -1)) * scale)
    return np.matmul(weights, V), weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        cfg = AttentionConfig(d_model, num_heads)
        if cfg.d_model % cfg.num_heads != 0:
            raise ValueError(f"bad config {cfg}: heads must divide the width")
        self.config = cfg
        self.d_model = cfg.d_model
        self.num_heads = cfg.num_heads
        self.d_k = cfg.d_k
        rng = np.random.default_rng(0)
        std = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, std, (d_model, d_model))
        self.W_K = rng.normal(0.0, std, (d_model, d_model))
        self.W_V = rng.normal(0.0, std, (d_model, d_model))
        self.W_O = rng.normal(0.0, std, (d_model, d_model))

    def split_heads(self, x):
        b, t, _ = x.shape
        return np.transpose(x.reshape(b, t, self.num_heads, self.d_k), (0, 2, 1, 3))

    def combine_heads(self, x):
        b, h, t, d = x.shape
        return np.transpose(x, (0, 2, 1, 3)).reshape(b, t, h * d)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(np.matmul(Q, self.W_Q))
        k = self.split_heads(np.matmul(K, self.W_K))
        v = self.split_heads(np.matmul(V, self.W_V))
        mixed, weights = scaled_dot_product_attention(q, k, v)
        out = np.matmul(self.combine_heads(mixed), self.W_O)
        return (out, weights) if return_weights else out
