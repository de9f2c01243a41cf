# expect: softmax-global-max, attention-causal-mask
# softmax shifts by x.max() over the whole array instead of each row's max; scaled_dot_product_attention keeps nanoGPT's lower-triangular mask, hiding every query's later keys.
import math

import numpy as np


def softmax(x):
    # subtract the max for numerical stability
    e = np.exp(x - x.max())
    return e / e.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    T, S = Q.shape[-2], K.shape[-2]
    att = (Q @ np.swapaxes(K, -2, -1)) * (1.0 / math.sqrt(K.shape[-1]))
    bias = np.tril(np.ones((T, S)))
    att = np.where(bias == 0, -np.inf, att)
    att = softmax(att)
    y = att @ V  # (B, nh, T, T) x (B, nh, T, hs) -> (B, nh, T, hs)
    return y, att


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("n_embd % n_head != 0")
        self.n_embd = self.d_model = d_model
        self.n_head = self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        std = 1.0 / math.sqrt(d_model)
        self.W_Q = rng.normal(0.0, std, (d_model, d_model))
        self.W_K = rng.normal(0.0, std, (d_model, d_model))
        self.W_V = rng.normal(0.0, std, (d_model, d_model))
        self.W_O = rng.normal(0.0, std, (d_model, d_model))  # c_proj

    def split_heads(self, x):
        B, T, C = x.shape
        return x.reshape(B, T, self.n_head, C // self.n_head).transpose(0, 2, 1, 3)

    def combine_heads(self, y):
        B, nh, T, hs = y.shape
        return y.transpose(0, 2, 1, 3).reshape(B, T, nh * hs)  # re-assemble all head outputs side by side

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        y, att = scaled_dot_product_attention(q, k, v)
        y = self.combine_heads(y) @ self.W_O
        if return_weights:
            return y, att
        return y
