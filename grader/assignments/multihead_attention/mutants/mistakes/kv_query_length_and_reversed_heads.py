# expect: mha-kv-uses-query-length, combine-heads-wrong-order
# Two mistakes: combine_heads concatenates the heads last to first, and K/V are reshaped with T.
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
        return np.concatenate([x[:, h] for h in reversed(range(x.shape[1]))], axis=-1)  # (B, T, D)

    def forward(self, Q, K, V, return_weights=False):
        batch, length, _ = Q.shape
        shape = (batch, length, self.num_heads, self.d_k)
        q, k, v = ((x @ W).reshape(shape).swapaxes(1, 2) for x, W in ((Q, self.W_Q), (K, self.W_K), (V, self.W_V)))
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(heads) @ self.W_O
        return (out, weights) if return_weights else out
