# expect: softmax-mutates-input
# The shift is subtracted from the caller's array in place before exponentiating.
import numpy as np


def softmax(x):
    x -= np.max(x, axis=-1, keepdims=True)
    e = np.exp(x)
    return e / np.sum(e, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    logits = np.matmul(Q, np.swapaxes(K, -2, -1)) / np.sqrt(K.shape[-1])
    w = softmax(logits)
    return np.matmul(w, V), w


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        self.h, self.d_k = num_heads, d_model // num_heads

    def split_heads(self, x):
        return x.reshape(x.shape[0], -1, self.h, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        return x.transpose(0, 2, 1, 3).reshape(x.shape[0], -1, self.h * self.d_k)

    def forward(self, Q, K, V, return_weights=False):
        o, w = scaled_dot_product_attention(self.split_heads(Q @ self.W_Q), self.split_heads(K @ self.W_K),
                                            self.split_heads(V @ self.W_V))
        o = self.combine_heads(o) @ self.W_O
        return (o, w) if return_weights else o
