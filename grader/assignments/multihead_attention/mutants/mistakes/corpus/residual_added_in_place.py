# expect: mha-adds-residual
# The block's skip connection written into forward: the queries are added to
# the projected output in place.
import numpy as np


def softmax(x):
    x = x - np.max(x, axis=-1, keepdims=True)
    return np.exp(x) / np.sum(np.exp(x), axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    scores = np.matmul(Q, K.swapaxes(-1, -2)) / np.sqrt(Q.shape[-1])
    w = softmax(scores)
    return np.matmul(w, V), w


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        self.num_heads, self.d_k = num_heads, d_model // num_heads

    def split_heads(self, x):
        B, T, _ = x.shape
        return x.reshape(B, T, self.num_heads, self.d_k).swapaxes(1, 2)

    def combine_heads(self, x):
        B, H, T, d = x.shape
        return x.swapaxes(1, 2).reshape(B, T, H * d)

    def forward(self, Q, K, V, return_weights=False):
        q, k, v = self.split_heads(Q @ self.W_Q), self.split_heads(K @ self.W_K), self.split_heads(V @ self.W_V)
        ctx, w = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(ctx) @ self.W_O
        out += Q  # residual
        return (out, w) if return_weights else out
