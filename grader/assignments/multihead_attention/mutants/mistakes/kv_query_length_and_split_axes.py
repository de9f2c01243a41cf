# expect: mha-kv-uses-query-length, split-heads-wrong-axes
# Two mistakes: split_heads puts the head axis first, and forward cuts K/V with the query's length.
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

    def split_heads(self, x, length=None):
        batch, own_length, _ = x.shape
        length = own_length if length is None else length
        return x.reshape(batch, length, self.num_heads, self.d_k).transpose(2, 0, 1, 3)  # (H, B, T, d_k)

    def combine_heads(self, x):
        batch, heads, length, d_k = x.shape
        return x.transpose(0, 2, 1, 3).reshape(batch, length, heads * d_k)  # (B, T, D)

    def forward(self, Q, K, V, return_weights=False):
        length = Q.shape[1]
        heads, weights = scaled_dot_product_attention(
            self.split_heads(Q @ self.W_Q), self.split_heads(K @ self.W_K, length),
            self.split_heads(V @ self.W_V, length))
        out = self.combine_heads(heads) @ self.W_O
        return (out, weights) if return_weights else out
