# expect: softmax-unstable
# exp of the raw scores, summed with np.add.reduce: right for small inputs,
# inf / inf = nan once a score passes ~709.
import numpy as np


def softmax(x):
    e = np.exp(x)
    return e / np.add.reduce(e, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    scores = Q @ K.transpose(0, 1, 3, 2) / np.sqrt(Q.shape[-1])
    weights = softmax(scores)
    return weights @ V, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        self.num_heads, self.d_k = num_heads, d_model // num_heads

    def split_heads(self, x):
        B, T, _ = x.shape
        return x.reshape(B, T, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        B, H, T, d = x.shape
        return x.transpose(0, 2, 1, 3).reshape(B, T, H * d)

    def forward(self, Q, K, V, return_weights=False):
        o, w = scaled_dot_product_attention(self.split_heads(Q @ self.W_Q), self.split_heads(K @ self.W_K),
                                            self.split_heads(V @ self.W_V))
        o = self.combine_heads(o) @ self.W_O
        return (o, w) if return_weights else o
