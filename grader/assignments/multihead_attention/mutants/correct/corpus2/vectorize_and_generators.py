# expect: correct
# np.vectorize for the scale, generator expressions feeding np.stack for the
# heads, and a name reused for several things inside forward.
import math

import numpy as np


def softmax(x):
    out = np.exp(x - np.max(x, axis=-1, keepdims=True))
    out /= np.sum(out, axis=-1, keepdims=True)
    return out


_scale = np.vectorize(lambda s, d: s / math.sqrt(d), otypes=[float])


def scaled_dot_product_attention(Q, K, V):
    w = softmax(_scale(Q @ np.swapaxes(K, -1, -2), K.shape[-1]))
    return w @ V, w


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        self.W_Q = rng.normal(0.0, 1.0 / np.sqrt(d_model), (d_model, d_model))
        self.W_K = rng.normal(0.0, 1.0 / np.sqrt(d_model), (d_model, d_model))
        self.W_V = rng.normal(0.0, 1.0 / np.sqrt(d_model), (d_model, d_model))
        self.W_O = rng.normal(0.0, 1.0 / np.sqrt(d_model), (d_model, d_model))

    def split_heads(self, x):
        d = self.d_k
        return np.stack(tuple(x[:, :, h * d:(h + 1) * d] for h in range(self.num_heads)), axis=1)

    def combine_heads(self, x):
        return np.concatenate(tuple(x[:, h, :, :] for h in range(x.shape[1])), axis=2)

    def forward(self, Q, K, V, return_weights=False):
        x = Q @ self.W_Q
        q = self.split_heads(x)
        x = K @ self.W_K
        k = self.split_heads(x)
        x = V @ self.W_V
        x, w = scaled_dot_product_attention(q, k, self.split_heads(x))
        x = self.combine_heads(x) @ self.W_O
        return (x, w) if return_weights else x
