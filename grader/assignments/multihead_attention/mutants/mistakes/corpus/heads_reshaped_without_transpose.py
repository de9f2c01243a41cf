# expect: split-heads-no-transpose
# np.reshape straight to (b, heads, -1, d_k): the right shape, the wrong features.
import numpy as np


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    a = softmax(s)
    return a @ V, a


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads:
            raise ValueError("uneven heads")
        self.num_heads, self.d_k = num_heads, d_model // num_heads

    def split_heads(self, x):
        return np.reshape(x, (x.shape[0], self.num_heads, -1, self.d_k))

    def combine_heads(self, x):
        b, h, t, d = x.shape
        return np.swapaxes(x, 1, 2).reshape(b, t, h * d)

    def forward(self, Q, K, V, return_weights=False):
        o, a = scaled_dot_product_attention(self.split_heads(Q @ self.W_Q), self.split_heads(K @ self.W_K),
                                            self.split_heads(V @ self.W_V))
        o = self.combine_heads(o) @ self.W_O
        return (o, a) if return_weights else o
