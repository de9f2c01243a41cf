# expect: softmax-unstable
# forward loops over the heads with plain np.exp on each head's raw scores.
import numpy as np


def softmax(x):
    shifted = x - np.max(x, axis=-1, keepdims=True)
    powers = np.exp(shifted)
    return powers / np.sum(powers, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])  # (B, H, T, S)
    weights = softmax(scores)
    return weights @ V, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads:
            raise ValueError("num_heads must divide d_model")
        self.num_heads = num_heads
        self.d_k = d_model // num_heads

    def split_heads(self, x):
        batch, length, _ = x.shape
        return x.reshape(batch, length, self.num_heads, self.d_k).transpose(0, 2, 1, 3)  # (B, H, T, d_k)

    def combine_heads(self, x):
        batch, heads, length, d_k = x.shape
        return x.transpose(0, 2, 1, 3).reshape(batch, length, heads * d_k)  # (B, T, D)

    def forward(self, Q, K, V, return_weights=False):
        q, k, v = (self.split_heads(x @ W) for x, W in ((Q, self.W_Q), (K, self.W_K), (V, self.W_V)))
        heads, maps = [], []
        for h in range(self.num_heads):
            e = np.exp(q[:, h] @ k[:, h].transpose(0, 2, 1) / self.d_k ** 0.5)  # (B, T, S)
            w = e / e.sum(-1, keepdims=True)
            maps.append(w)
            heads.append(w @ v[:, h])
        weights = np.stack(maps, axis=1)  # (B, H, T, S)
        out = np.concatenate(heads, axis=-1) @ self.W_O
        return (out, weights) if return_weights else out
