# expect: mha-wrong-weights-returned, mha-no-output-projection
# Two mistakes: the per-head loop variable w leaks out, so only the last head's (B, 1, T, S) weights are returned; and the concatenated heads are returned without W_O.
"""Multi-head attention as a dataclass, with one attention call per head in a loop.

The layer's sizes are dataclass fields and the weights are created in
__post_init__. forward slices one head at a time (keeping the head axis with a
length-1 slice), collects the outputs in a list and concatenates them.
"""

from dataclasses import dataclass

import numpy as np


def softmax(x):
    m = np.max(x, axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / np.sum(e, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)  # (B, H, T, S)
    weights = softmax(scores)
    return weights @ V, weights


@dataclass
class MultiHeadAttention:
    d_model: int = 8
    num_heads: int = 2

    def __post_init__(self):
        if self.d_model % self.num_heads != 0:
            raise ValueError(f"d_model={self.d_model} is not divisible by num_heads={self.num_heads}")
        self.d_k = self.d_model // self.num_heads
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(self.d_model)
        shape = (self.d_model, self.d_model)
        self.W_Q = rng.normal(0.0, scale, shape)
        self.W_K = rng.normal(0.0, scale, shape)
        self.W_V = rng.normal(0.0, scale, shape)
        self.W_O = rng.normal(0.0, scale, shape)

    def split_heads(self, x):
        b, t, _ = x.shape
        return x.reshape(b, t, self.num_heads, self.d_k).transpose(0, 2, 1, 3)  # (B, H, T, d_k)

    def combine_heads(self, x):
        b, h, t, d_k = x.shape
        return x.transpose(0, 2, 1, 3).reshape(b, t, h * d_k)  # (B, T, D)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        outputs = []
        for h in range(self.num_heads):
            o, w = scaled_dot_product_attention(q[:, h:h + 1], k[:, h:h + 1], v[:, h:h + 1])
            outputs.append(o)  # (B, 1, T, d_k)
        heads = np.concatenate(outputs, axis=1)  # (B, H, T, d_k)
        out = self.combine_heads(heads)
        if return_weights:
            return out, w
        return out
