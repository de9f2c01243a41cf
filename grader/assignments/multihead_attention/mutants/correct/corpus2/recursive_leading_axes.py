# expect: correct
# Attention written for one (T, d_k) matrix and lifted to any number of
# leading axes by recursion; softmax recurses the same way.
import numpy as np


def softmax(x):
    x = np.asarray(x)
    if x.ndim > 1:
        return np.stack([softmax(row) for row in x])
    finite = x - np.max(x)
    e = np.exp(finite)
    return e / e.sum()


def scaled_dot_product_attention(Q, K, V):
    if Q.ndim > 2:
        pairs = [scaled_dot_product_attention(q, k, v) for q, k, v in zip(Q, K, V)]
        return np.stack([p[0] for p in pairs]), np.stack([p[1] for p in pairs])
    scores = Q @ K.T / np.sqrt(Q.shape[1])
    weights = softmax(scores)
    return weights @ V, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model must be a multiple of num_heads")
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        self.W_Q = rng.normal(0.0, d_model ** -0.5, (d_model, d_model))
        self.W_K = rng.normal(0.0, d_model ** -0.5, (d_model, d_model))
        self.W_V = rng.normal(0.0, d_model ** -0.5, (d_model, d_model))
        self.W_O = rng.normal(0.0, d_model ** -0.5, (d_model, d_model))

    def split_heads(self, x):
        B, T, D = x.shape
        return np.transpose(np.reshape(x, (B, T, self.num_heads, D // self.num_heads)), (0, 2, 1, 3))

    def combine_heads(self, x):
        B, H, T, d = x.shape
        return np.reshape(np.transpose(x, (0, 2, 1, 3)), (B, T, H * d))

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        ctx, weights = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(ctx) @ self.W_O
        if return_weights:
            return out, weights
        return out
