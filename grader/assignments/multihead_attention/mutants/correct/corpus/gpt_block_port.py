# expect: correct
# A GPT-style causal-attention block ported to NumPy, the mask left out: one fused
# scale factor, swapaxes for the key transpose, C // n_head for the head width.
import math

import numpy as np


def softmax(x):
    x = x - x.max(axis=-1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    att = (Q @ K.swapaxes(-2, -1)) * (1.0 / math.sqrt(K.shape[-1]))
    att = softmax(att)
    y = att @ V  # (B, nh, T, T) x (B, nh, T, hs) -> (B, nh, T, hs)
    return y, att


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError(f"n_embd={d_model} is not a multiple of n_head={num_heads}")
        self.n_embd = d_model
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
        if return_weights:
            return y, att
        return y
