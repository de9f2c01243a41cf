# expect: split-heads-wrong-axes
# split_heads calls np.rollaxis(x, 2) without the start argument, so the head axis goes to the front and it returns (H, B, T, d_k) instead of (B, H, T, d_k).
import numpy as np


def softmax(x):
    """Row-wise softmax (last axis), shifted by the row maximum."""
    x_max = np.amax(x, axis=-1, keepdims=True)
    unnormalized = np.exp(x - x_max)
    return unnormalized / np.sum(unnormalized, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    """softmax(Q K^T / sqrt(d_k)) V over the last two axes."""
    K_T = np.rollaxis(K, 3, 2)          # (B, H, d_k, S)
    scores = np.matmul(Q, K_T) / np.sqrt(Q.shape[3])
    weights = softmax(scores)
    return np.matmul(weights, V), weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model is not a multiple of num_heads")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, scale, (d_model, d_model))
        self.W_K = rng.normal(0.0, scale, (d_model, d_model))
        self.W_V = rng.normal(0.0, scale, (d_model, d_model))
        self.W_O = rng.normal(0.0, scale, (d_model, d_model))

    def split_heads(self, x):
        B, T, _ = x.shape
        x = x.reshape(B, T, self.num_heads, self.d_k)   # (B, T, H, d_k)
        return np.rollaxis(x, 2)                          # heads next to batch

    def combine_heads(self, x):
        B, H, T, d_k = x.shape
        x = np.rollaxis(x, 1, 3)                          # (B, T, H, d_k)
        return x.reshape(B, T, H * d_k)

    def forward(self, Q, K, V, return_weights=False):
        heads_q = self.split_heads(Q @ self.W_Q)
        heads_k = self.split_heads(K @ self.W_K)
        heads_v = self.split_heads(V @ self.W_V)
        context, weights = scaled_dot_product_attention(heads_q, heads_k, heads_v)
        out = self.combine_heads(context) @ self.W_O
        return (out, weights) if return_weights else out
