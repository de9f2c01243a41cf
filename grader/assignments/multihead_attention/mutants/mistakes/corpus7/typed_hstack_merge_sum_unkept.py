# expect: softmax-no-keepdims
# In softmax the row max keeps its axis but the row sum (np.sum(e, axis=-1)) does not, so the division broadcasts against the wrong axis (or fails).
from typing import Tuple

import numpy as np

Array = np.ndarray


def softmax(x: Array) -> Array:
    z = x - np.max(x, axis=-1, keepdims=True)
    e = np.exp(z)
    return e / np.sum(e, axis=-1)


def scaled_dot_product_attention(Q: Array, K: Array, V: Array) -> Tuple[Array, Array]:
    d_k: int = Q.shape[-1]
    scores: Array = np.matmul(Q, np.swapaxes(K, -1, -2)) / np.sqrt(d_k)
    weights: Array = softmax(scores)
    return np.matmul(weights, V), weights


class MultiHeadAttention:
    def __init__(self, d_model: int = 8, num_heads: int = 2) -> None:
        if d_model % num_heads != 0:
            raise ValueError("d_model must be a multiple of num_heads")
        self.d_model: int = d_model
        self.num_heads: int = num_heads
        self.d_k: int = d_model // num_heads
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(d_model)
        self.W_Q: Array = rng.normal(0.0, scale, (d_model, d_model))
        self.W_K: Array = rng.normal(0.0, scale, (d_model, d_model))
        self.W_V: Array = rng.normal(0.0, scale, (d_model, d_model))
        self.W_O: Array = rng.normal(0.0, scale, (d_model, d_model))

    def split_heads(self, x: Array) -> Array:
        chunks = np.split(x, self.num_heads, axis=-1)   # H arrays of (B, T, d_k)
        return np.stack(chunks, axis=1)                 # (B, H, T, d_k)

    def combine_heads(self, x: Array) -> Array:
        B = x.shape[0]
        rows = [np.hstack([x[b, h] for h in range(x.shape[1])]) for b in range(B)]  # each (T, D)
        return np.stack(rows, axis=0)

    def forward(self, Q: Array, K: Array, V: Array, return_weights: bool = False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(heads) @ self.W_O
        return (out, weights) if return_weights else out
