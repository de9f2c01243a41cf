# expect: correct
# assert for the divisibility check (an AssertionError refuses the width just as
# well), reshape(..., -1) for the head width, the weights normalised in place.
import numpy as np


def softmax(x):
    y = np.exp(x - np.max(x, axis=-1, keepdims=True))
    y /= y.sum(axis=-1, keepdims=True)
    return y


def scaled_dot_product_attention(Q, K, V):
    d_k = K.shape[-1]
    scores = Q @ K.transpose(0, 1, 3, 2)
    scores = scores / np.sqrt(d_k)
    p = softmax(scores)
    return p @ V, p


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        assert d_model % num_heads == 0, "d_model % h != 0"
        self.h = num_heads

    def split_heads(self, x):
        b, n, _ = x.shape
        return x.reshape(b, n, self.h, -1).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        b, _, n, _ = x.shape
        return x.transpose(0, 2, 1, 3).reshape(b, n, -1)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        x, p = scaled_dot_product_attention(q, k, v)
        x = self.combine_heads(x) @ self.W_O
        return (x, p) if return_weights else x
