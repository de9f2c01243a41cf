# expect: attention-scale-after-softmax
# The 1/sqrt(d_k) factor lands on the values, after the softmax of the raw scores.
import numpy as np


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    weights = softmax(np.einsum("bhqd,bhkd->bhqk", Q, K))
    out = np.einsum("bhqk,bhkd->bhqd", weights, V / np.sqrt(V.shape[-1]))
    return out, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads:
            raise ValueError("d_model must be divisible by num_heads")
        self.num_heads = num_heads

    def split_heads(self, x):
        B, T, D = x.shape
        return x.reshape(B, T, self.num_heads, D // self.num_heads).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        B, H, T, d = x.shape
        return x.transpose(0, 2, 1, 3).reshape(B, T, H * d)

    def forward(self, Q, K, V, return_weights=False):
        o, w = scaled_dot_product_attention(self.split_heads(Q @ self.W_Q), self.split_heads(K @ self.W_K),
                                            self.split_heads(V @ self.W_V))
        o = self.combine_heads(o) @ self.W_O
        return (o, w) if return_weights else o
