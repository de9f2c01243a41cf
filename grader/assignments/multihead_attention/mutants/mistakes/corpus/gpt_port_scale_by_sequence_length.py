# expect: attention-wrong-scale
# A GPT-style port that takes the scale from the wrong axis: q.shape[-2] is the
# number of queries, not the width of one head.
import math

import numpy as np


def softmax(x):
    x = x - x.max(axis=-1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    att = (Q @ K.swapaxes(-2, -1)) * (1.0 / math.sqrt(Q.shape[-2]))
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
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        y, att = scaled_dot_product_attention(q, k, v)
        y = self.combine_heads(y) @ self.W_O
        return (y, att) if return_weights else y
