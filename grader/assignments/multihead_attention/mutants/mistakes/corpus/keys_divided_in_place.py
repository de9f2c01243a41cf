# expect: attention-mutates-input
# Scales the keys in place with /=, changing the caller's K.
import numpy as np


def softmax(x):
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    K /= np.sqrt(K.shape[-1])
    w = softmax(np.einsum("bhqd,bhkd->bhqk", Q, K))
    return np.einsum("bhqk,bhkd->bhqd", w, V), w


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads:
            raise ValueError("heads")
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
