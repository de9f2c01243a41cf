# expect: softmax-no-keepdims
# Written for a 2-D score matrix: the row maxima and sums are put back with
# [:, None], which on a 4-D array inserts the axis in the wrong place.
import numpy as np


def softmax(x):
    e = np.exp(x - x.max(axis=-1)[:, None])
    return e / e.sum(axis=-1)[:, None]


def scaled_dot_product_attention(Q, K, V):
    scores = np.matmul(Q, K.swapaxes(-1, -2)) / np.sqrt(Q.shape[-1])
    w = softmax(scores)
    return np.matmul(w, V), w


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads:
            raise ValueError("num_heads must divide d_model")
        self.num_heads, self.d_k = num_heads, d_model // num_heads

    def split_heads(self, x):
        B, T, _ = x.shape
        return x.reshape(B, T, self.num_heads, self.d_k).swapaxes(1, 2)

    def combine_heads(self, x):
        B, H, T, d = x.shape
        return x.swapaxes(1, 2).reshape(B, T, H * d)

    def forward(self, Q, K, V, return_weights=False):
        o, w = scaled_dot_product_attention(self.split_heads(Q @ self.W_Q), self.split_heads(K @ self.W_K),
                                            self.split_heads(V @ self.W_V))
        o = self.combine_heads(o) @ self.W_O
        return (o, w) if return_weights else o
