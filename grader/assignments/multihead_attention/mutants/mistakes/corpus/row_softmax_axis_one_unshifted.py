# expect: softmax-unstable, softmax-wrong-axis
# A softmax written for a 2-D score matrix: no shift, and the sum over axis 1,
# which is the heads' axis once the scores are (B, H, T, S).
import numpy as np


def softmax(z):
    t = np.exp(z)
    return t / np.expand_dims(np.sum(t, axis=1), 1)


def scaled_dot_product_attention(Q, K, V):
    scores = Q @ K.transpose(0, 1, 3, 2) / np.sqrt(Q.shape[-1])
    weights = softmax(scores)
    return weights @ V, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads:
            raise ValueError("d_model must be divisible by num_heads")
        self.num_heads = num_heads
        self.d_k = d_model // num_heads

    def split_heads(self, x):
        B, T, D = x.shape
        return x.reshape(B, T, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        B, H, T, d = x.shape
        return x.transpose(0, 2, 1, 3).reshape(B, T, H * d)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        out, w = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(out) @ self.W_O
        return (out, w) if return_weights else out
