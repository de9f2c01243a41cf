# expect: softmax-wrong-axis, mha-wrong-weights-returned
# softmax normalises over ROW_AXIS = 1 (the second axis) instead of the last one; forward stacks the per-head weight maps on a new axis 0, returning them as (H, B, T, S)
"""Per-head loop in ``forward``, written for readability.

Each head is attended separately and the results are stacked back together;
softmax keeps the reduced axis with ``keepdims``.
"""

import numpy as np

ROW_AXIS = 1   # each row of the score matrix is one distribution


def softmax(x):
    x = np.asarray(x)
    m = np.max(x, axis=ROW_AXIS, keepdims=True)
    e = np.exp(x - m)
    return e / np.sum(e, axis=ROW_AXIS, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)
    a = softmax(scores)
    return a @ V, a


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model is not a multiple of num_heads")
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
        return x.reshape(B, T, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        B, H, T, dk = x.shape
        return x.transpose(0, 2, 1, 3).reshape(B, T, H * dk)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        outs, maps = [], []
        for h in range(self.num_heads):
            o, a = scaled_dot_product_attention(q[:, h], k[:, h], v[:, h])
            outs.append(o)
            maps.append(a)
        ctx = np.stack(outs, axis=1)           # (B, H, T, d_k)
        weights = np.stack(maps)               # one map per head
        out = self.combine_heads(ctx) @ self.W_O
        if return_weights:
            return out, weights
        return out
