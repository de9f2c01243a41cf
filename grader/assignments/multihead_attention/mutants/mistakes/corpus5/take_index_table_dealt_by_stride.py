# expect: split-heads-interleaved
# the index table for np.take is built as arange(D).reshape(d_k, H).T, so head h gets features h, h+H, h+2H, ... (dealt round-robin) instead of one contiguous block
"""Multi-head attention with the head split done by ``np.take``.

An index table maps (head, slot) to a feature column; gathering with it gives
all heads in one call.  The merge uses reshape/transpose.
"""

import numpy as np


def softmax(x):
    x = np.asarray(x)
    row_max = np.max(x, axis=-1, keepdims=True)
    e = np.exp(x - row_max)
    return e / e.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    scores = np.matmul(Q, K.swapaxes(-1, -2)) / np.sqrt(d_k)
    attn = softmax(scores)
    return np.matmul(attn, V), attn


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        s = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, s, (d_model, d_model))
        self.W_K = rng.normal(0.0, s, (d_model, d_model))
        self.W_V = rng.normal(0.0, s, (d_model, d_model))
        self.W_O = rng.normal(0.0, s, (d_model, d_model))

    def _head_index(self):
        # table[h, j] = which feature column is slot j of head h
        return np.arange(self.d_model).reshape(self.d_k, self.num_heads).T

    def split_heads(self, x):
        picked = np.take(x, self._head_index(), axis=2)    # (B, T, H, d_k)
        return picked.transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        B, H, T, dk = x.shape
        return x.transpose(0, 2, 1, 3).reshape(B, T, H * dk)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        o, attn = scaled_dot_product_attention(q, k, v)
        o = self.combine_heads(o) @ self.W_O
        if return_weights:
            return o, attn
        return o
