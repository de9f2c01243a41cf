# expect: attention-wrong-scale
# SciPy's softmax, but the scores are divided by the square root of the number
# of keys, K.shape[-2], instead of the width of a head.
import numpy as np
from scipy.special import softmax as sp_softmax


def softmax(x):
    return sp_softmax(x, axis=-1)


def scaled_dot_product_attention(Q, K, V):
    n_keys = K.shape[-2]
    w = softmax(np.einsum("bhid,bhjd->bhij", Q, K) / np.sqrt(n_keys))
    return np.einsum("bhij,bhjd->bhid", w, V), w


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("num_heads must divide d_model")
        self.h = num_heads

    def split_heads(self, x):
        B, T, D = x.shape
        return x.reshape(B, T, self.h, D // self.h).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        B, H, T, d = x.shape
        return x.transpose(0, 2, 1, 3).reshape(B, T, H * d)

    def forward(self, Q, K, V, return_weights=False):
        o, w = scaled_dot_product_attention(self.split_heads(Q @ self.W_Q), self.split_heads(K @ self.W_K),
                                            self.split_heads(V @ self.W_V))
        o = self.combine_heads(o) @ self.W_O
        return (o, w) if return_weights else o
