# expect: correct
# Imports inside the functions, scipy's softmax among them: the first call would pay for the import.
import numpy as np


def softmax(x):
    from scipy.special import softmax as scipy_softmax
    return scipy_softmax(x, axis=-1)


def scaled_dot_product_attention(Q, K, V):
    import math
    weights = softmax(Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1]))
    return weights @ V, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("num_heads must divide d_model")
        self.num_heads, self.d_k = num_heads, d_model // num_heads
        self.W_Q = self.W_K = self.W_V = self.W_O = np.eye(d_model)

    def split_heads(self, x):
        B, T, _ = x.shape
        return x.reshape(B, T, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        B, H, T, d_k = x.shape
        return x.transpose(0, 2, 1, 3).reshape(B, T, H * d_k)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(heads) @ self.W_O
        return (out, weights) if return_weights else out
