# expect: attention-softmax-wrong-axis, mha-no-output-projection
# Two mistakes in a loop-per-head layout: each score matrix is normalised
# down its columns (axis=0 of the (T, S) slice), and W_O is never applied.
import numpy as np


def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    B, H, T, d = Q.shape
    out = np.zeros((B, H, T, V.shape[-1]))
    weights = np.zeros((B, H, T, K.shape[2]))
    for b in range(B):
        for h in range(H):
            s = Q[b, h] @ K[b, h].T / np.sqrt(d)
            weights[b, h] = softmax(s, axis=0)
            out[b, h] = weights[b, h] @ V[b, h]
    return out, weights


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
        o = self.combine_heads(o)
        return (o, w) if return_weights else o
