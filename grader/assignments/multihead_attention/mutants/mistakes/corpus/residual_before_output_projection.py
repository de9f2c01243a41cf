# expect: mha-adds-residual
# The skip connection goes in before the output projection: (heads + Q) @ W_O.
import numpy as np


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    att = Q @ K.transpose(0, 1, 3, 2) / np.sqrt(K.shape[-1])
    att = softmax(att)
    return att @ V, att


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads:
            raise ValueError("num_heads must divide d_model")
        self.h = num_heads

    def split_heads(self, x):
        B, T, C = x.shape
        return x.reshape(B, T, self.h, C // self.h).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        B, H, T, d = x.shape
        return x.transpose(0, 2, 1, 3).reshape(B, T, H * d)

    def forward(self, Q, K, V, return_weights=False):
        y, att = scaled_dot_product_attention(self.split_heads(Q @ self.W_Q), self.split_heads(K @ self.W_K),
                                              self.split_heads(V @ self.W_V))
        y = (self.combine_heads(y) + Q) @ self.W_O
        return (y, att) if return_weights else y
