# expect: correct
# Interview-prep style: explicit loops over batch and heads with np.dot on 2-D
# slices, a softmax written for one row and applied row by row.
import numpy as np


def softmax(x):
    x = np.asarray(x, dtype=float)
    out = np.empty_like(x)
    flat_in = x.reshape(-1, x.shape[-1])
    flat_out = out.reshape(-1, x.shape[-1])
    for i, row in enumerate(flat_in):
        z = np.exp(row - row.max())
        flat_out[i] = z / z.sum()
    return out


def scaled_dot_product_attention(Q, K, V):
    B, H, T, d = Q.shape
    S = K.shape[2]
    out = np.zeros((B, H, T, V.shape[-1]))
    weights = np.zeros((B, H, T, S))
    for b in range(B):
        for h in range(H):
            scores = np.dot(Q[b, h], K[b, h].T) / np.sqrt(d)
            weights[b, h] = softmax(scores)
            out[b, h] = np.dot(weights[b, h], V[b, h])
    return out, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model has to be a multiple of num_heads")
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads

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
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        o, w = scaled_dot_product_attention(q, k, v)
        o = self.combine_heads(o) @ self.W_O
        if return_weights:
            return o, w
        return o
