# expect: attention-returns-scores
# The probabilities are computed under a new name, but the scaled logits are
# what comes back as the second value.
import math

import numpy as np


def softmax(x):
    x = x - x.max(axis=-1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    att = (Q @ K.swapaxes(-2, -1)) * (1.0 / math.sqrt(K.shape[-1]))
    probs = softmax(att)
    y = probs @ V
    return y, att


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
        y, att = scaled_dot_product_attention(self.split_heads(Q @ self.W_Q), self.split_heads(K @ self.W_K),
                                              self.split_heads(V @ self.W_V))
        y = self.combine_heads(y) @ self.W_O
        return (y, att) if return_weights else y
