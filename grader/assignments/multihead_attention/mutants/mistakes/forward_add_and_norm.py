# expect: mha-adds-residual, mha-adds-layer-norm
# forward applies the block's Add & Norm: layer norm of the query input plus the attention.
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
        heads, weights = scaled_dot_product_attention(
            self.split_heads(Q @ self.W_Q), self.split_heads(K @ self.W_K), self.split_heads(V @ self.W_V))
        y = Q + self.combine_heads(heads) @ self.W_O  # (B, T, D)
        out = (y - y.mean(-1, keepdims=True)) / (y.std(-1, keepdims=True) + 1e-5)
        return (out, weights) if return_weights else out
