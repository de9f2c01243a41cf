# expect: mha-ignores-key-value
# A self-attention port: every projection is applied to the one input x = Q,
# so K and V are never read.
import math

import numpy as np


def softmax(x):
    x = x - x.max(axis=-1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    att = (Q @ K.swapaxes(-2, -1)) * (1.0 / math.sqrt(K.shape[-1]))
    att = softmax(att)
    return att @ V, att


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("n_embd must be a multiple of n_head")
        self.n_head = num_heads

    def split_heads(self, x):
        B, T, C = x.shape
        return x.reshape(B, T, self.n_head, C // self.n_head).transpose(0, 2, 1, 3)

    def combine_heads(self, y):
        B, nh, T, hs = y.shape
        return y.transpose(0, 2, 1, 3).reshape(B, T, nh * hs)

    def forward(self, Q, K, V, return_weights=False):
        x = Q
        q, k, v = (self.split_heads(x @ W) for W in (self.W_Q, self.W_K, self.W_V))
        y, att = scaled_dot_product_attention(q, k, v)
        y = self.combine_heads(y) @ self.W_O
        return (y, att) if return_weights else y
