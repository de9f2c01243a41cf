# expect: split-heads-interleaved, mha-no-output-projection
"""Loops over heads, written from a diagram.

Two slips: split_heads deals feature j to head j % H (a stride of H, not a
block of d_k), and forward hands back the merged heads without W_O.
"""

import numpy as np


def softmax(x):
    top = np.amax(x, axis=-1, keepdims=True)
    w = np.exp(x - top)
    return w / np.sum(w, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    width = Q.shape[-1]
    w = softmax(np.matmul(Q, np.swapaxes(K, -2, -1)) / np.sqrt(width))
    return np.matmul(w, V), w


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError(f"{num_heads} heads cannot share {d_model} features")
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        r = np.random.default_rng(11)
        s = d_model ** -0.5
        self.W_Q = r.normal(0, s, (d_model, d_model))
        self.W_K = r.normal(0, s, (d_model, d_model))
        self.W_V = r.normal(0, s, (d_model, d_model))
        self.W_O = r.normal(0, s, (d_model, d_model))

    def split_heads(self, x):
        heads = [x[:, :, h::self.num_heads] for h in range(self.num_heads)]  # feature j -> head j % H
        return np.stack(heads, axis=1)

    def combine_heads(self, x):
        return np.concatenate([x[:, h] for h in range(x.shape[1])], axis=-1)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        mixed, w = scaled_dot_product_attention(q, k, v)
        merged = self.combine_heads(mixed)
        return (merged, w) if return_weights else merged
