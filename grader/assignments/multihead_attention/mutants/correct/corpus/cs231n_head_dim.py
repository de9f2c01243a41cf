# expect: correct
# A course-assignment layout: head_dim and n_head attributes, key.transpose(0, 1, 3, 2),
# the scaling applied to the scores with a precomputed factor, np.matmul everywhere.
import math

import numpy as np


def softmax(x):
    c = np.max(x, axis=-1, keepdims=True)
    exp_x = np.exp(x - c)
    return exp_x / np.sum(exp_x, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    head_dim = Q.shape[-1]
    attn = np.matmul(Q, K.transpose(0, 1, 3, 2)) / math.sqrt(head_dim)
    attn = softmax(attn)
    return np.matmul(attn, V), attn


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("embed_dim must be divisible by num_heads")
        self.n_head = num_heads
        self.emd_dim = d_model
        self.head_dim = d_model // num_heads

    def split_heads(self, x):
        N, S, E = x.shape
        return x.reshape(N, S, self.n_head, self.head_dim).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        N, H, S, hd = x.shape
        return x.transpose(0, 2, 1, 3).reshape(N, S, self.emd_dim)

    def forward(self, Q, K, V, return_weights=False):
        query = self.split_heads(np.matmul(Q, self.W_Q))
        key = self.split_heads(np.matmul(K, self.W_K))
        value = self.split_heads(np.matmul(V, self.W_V))
        y, attn = scaled_dot_product_attention(query, key, value)
        output = np.matmul(self.combine_heads(y), self.W_O)
        if return_weights:
            return output, attn
        return output
