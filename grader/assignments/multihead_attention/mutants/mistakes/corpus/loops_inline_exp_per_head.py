# expect: softmax-unstable
# A correct softmax is defined but the per-head loop writes its own
# normalisation inline, without the shift.
import numpy as np


def softmax(x):
    z = x - x.max(axis=-1, keepdims=True)
    return np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    B, H, T, d = Q.shape
    out = np.zeros((B, H, T, V.shape[-1]))
    weights = np.zeros((B, H, T, K.shape[2]))
    for b in range(B):
        for h in range(H):
            s = np.dot(Q[b, h], K[b, h].T) / np.sqrt(d)
            p = np.exp(s)
            weights[b, h] = p / p.sum(axis=1, keepdims=True)
            out[b, h] = np.dot(weights[b, h], V[b, h])
    return out, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model has to be a multiple of num_heads")
        self.num_heads, self.head_dim = num_heads, d_model // num_heads

    def split_heads(self, x):
        B, T, _ = x.shape
        out = np.zeros((B, self.num_heads, T, self.head_dim))
        for h in range(self.num_heads):
            out[:, h] = x[:, :, h * self.head_dim:(h + 1) * self.head_dim]
        return out

    def combine_heads(self, x):
        B, H, T, d = x.shape
        out = np.zeros((B, T, H * d))
        for h in range(H):
            out[:, :, h * d:(h + 1) * d] = x[:, h]
        return out

    def forward(self, Q, K, V, return_weights=False):
        o, w = scaled_dot_product_attention(self.split_heads(Q @ self.W_Q), self.split_heads(K @ self.W_K),
                                            self.split_heads(V @ self.W_V))
        o = self.combine_heads(o) @ self.W_O
        return (o, w) if return_weights else o
