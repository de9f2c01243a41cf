# expect: split-heads-interleaved
# Reshapes to (B, T, d_k, H), head last, then moves it forward: head i gets
# features i, i + H, i + 2H, ... instead of one contiguous block.
import numpy as np


def softmax(x):
    z = np.exp(x - x.max(axis=-1)[..., None])
    return z / z.sum(axis=-1)[..., None]


def scaled_dot_product_attention(Q, K, V):
    s = np.matmul(Q, np.moveaxis(K, -1, -2)) / np.sqrt(Q.shape[-1])
    a = softmax(s)
    return a @ V, a


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        self.h = num_heads
        self.dh, rem = divmod(d_model, num_heads)
        if rem:
            raise ValueError("d_model % num_heads = %d" % rem)

    def split_heads(self, x):
        b, t, _ = x.shape
        return x.reshape(b, t, self.dh, self.h).transpose(0, 3, 1, 2)

    def combine_heads(self, x):
        b, h, t, dh = x.shape
        return np.moveaxis(x, 1, 2).reshape(b, t, h * dh)

    def forward(self, Q, K, V, return_weights=False):
        o, a = scaled_dot_product_attention(self.split_heads(Q @ self.W_Q), self.split_heads(K @ self.W_K),
                                            self.split_heads(V @ self.W_V))
        o = self.combine_heads(o) @ self.W_O
        return (o, a) if return_weights else o
