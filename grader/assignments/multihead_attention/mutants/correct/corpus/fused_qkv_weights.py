# expect: correct
# The three input projections concatenated into one (D, 3D) matrix when the
# inputs are the same array, applied one by one when they are not.
import numpy as np


def softmax(x):
    shift = np.max(x, axis=-1, keepdims=True)
    y = np.exp(x - shift)
    y /= np.sum(y, axis=-1, keepdims=True)
    return y


def scaled_dot_product_attention(Q, K, V):
    dk = Q.shape[-1]
    w = softmax(Q @ K.transpose(0, 1, 3, 2) / dk ** 0.5)
    return w @ V, w


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("num_heads must divide d_model")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads

    def split_heads(self, x):
        B, T, D = x.shape
        return x.reshape(B, T, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        B, H, T, d = x.shape
        return x.transpose(0, 2, 1, 3).reshape(B, T, H * d)

    def forward(self, Q, K, V, return_weights=False):
        if Q is K and K is V:
            qkv = Q @ np.concatenate([self.W_Q, self.W_K, self.W_V], axis=1)  # (B, T, 3D)
            q, k, v = np.split(qkv, 3, axis=-1)
        else:
            q, k, v = Q @ self.W_Q, K @ self.W_K, V @ self.W_V
        out, w = scaled_dot_product_attention(self.split_heads(q), self.split_heads(k), self.split_heads(v))
        out = self.combine_heads(out) @ self.W_O
        return (out, w) if return_weights else out
