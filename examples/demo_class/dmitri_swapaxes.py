"""swapaxes everywhere, and a log-sum-exp softmax."""

import numpy as np


def softmax(x):
    top = np.max(x, axis=-1, keepdims=True)
    log_norm = top + np.log(np.sum(np.exp(x - top), axis=-1, keepdims=True))
    return np.exp(x - log_norm)


def scaled_dot_product_attention(Q, K, V):
    scores = np.matmul(Q, np.swapaxes(K, -2, -1)) * (1.0 / np.sqrt(K.shape[-1]))
    weights = softmax(scores)
    return np.matmul(weights, V), weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads:
            raise ValueError("d_model % num_heads != 0")
        self.h = num_heads
        self.W_Q = np.zeros((d_model, d_model))
        self.W_K = np.zeros((d_model, d_model))
        self.W_V = np.zeros((d_model, d_model))
        self.W_O = np.zeros((d_model, d_model))

    def split_heads(self, x):
        b, t, d = x.shape
        return np.swapaxes(x.reshape(b, t, self.h, d // self.h), 1, 2)

    def combine_heads(self, x):
        b, h, t, k = x.shape
        return np.swapaxes(x, 1, 2).reshape(b, t, h * k)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(np.matmul(Q, self.W_Q))
        k = self.split_heads(np.matmul(K, self.W_K))
        v = self.split_heads(np.matmul(V, self.W_V))
        attended, weights = scaled_dot_product_attention(q, k, v)
        result = np.matmul(self.combine_heads(attended), self.W_O)
        if return_weights:
            return result, weights
        return result
