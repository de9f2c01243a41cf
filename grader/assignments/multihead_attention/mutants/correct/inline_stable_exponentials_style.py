# expect: correct
# Attention and forward both normalise their scores themselves, shifted by each row's max.
import numpy as np


def softmax(x):
    shifted = x - np.max(x, axis=-1, keepdims=True)
    powers = np.exp(shifted)
    return powers / np.sum(powers, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    scores = np.matmul(Q, np.swapaxes(K, 2, 3)) / np.sqrt(Q.shape[3])
    powers = np.exp(scores - scores.max(axis=3, keepdims=True))
    weights = powers / powers.sum(axis=3, keepdims=True)
    return np.matmul(weights, V), weights


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
        scores = np.einsum("bhtd,bhsd->bhts", q, k) / np.sqrt(self.d_k)
        powers = np.exp(scores - np.expand_dims(scores.max(axis=-1), -1))
        weights = powers / np.expand_dims(powers.sum(axis=-1), -1)
        out = self.combine_heads(weights @ v) @ self.W_O
        return (out, weights) if return_weights else out
