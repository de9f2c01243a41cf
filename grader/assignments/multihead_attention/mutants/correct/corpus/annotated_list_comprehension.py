# expect: correct
# The annotated-transformer layout: one list comprehension projects and splits
# query, key and value; nbatches and -1 in the view; the attention as a free function.
import math

import numpy as np


def softmax(x):
    """Row-wise softmax on the last dimension."""
    m = np.max(x, axis=-1, keepdims=True)
    p = np.exp(x - m)
    return p / np.sum(p, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    "Compute 'Scaled Dot Product Attention'"
    d_k = Q.shape[-1]
    scores = np.matmul(Q, np.swapaxes(K, -2, -1)) / math.sqrt(d_k)
    p_attn = softmax(scores)
    return np.matmul(p_attn, V), p_attn


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        "Take in model size and number of heads."
        if d_model % num_heads:
            raise ValueError("d_model must be divisible by h")
        self.d_k = d_model // num_heads
        self.h = num_heads

    def split_heads(self, x):
        nbatches = x.shape[0]
        return x.reshape(nbatches, -1, self.h, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        nbatches = x.shape[0]
        return x.transpose(0, 2, 1, 3).reshape(nbatches, -1, self.h * self.d_k)

    def forward(self, Q, K, V, return_weights=False):
        query, key, value = [self.split_heads(x @ W)
                             for W, x in zip((self.W_Q, self.W_K, self.W_V), (Q, K, V))]
        x, attn = scaled_dot_product_attention(query, key, value)
        x = self.combine_heads(x)
        out = x @ self.W_O
        return (out, attn) if return_weights else out
