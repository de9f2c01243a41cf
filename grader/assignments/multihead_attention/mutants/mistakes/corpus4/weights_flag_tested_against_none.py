# expect: mha-wrong-weights-returned
# forward tests `return_weights is not None`, which is true for False as well, so it always returns the (out, weights) pair.
"""Multi-head attention as typed library code with Optional keyword arguments.

Signatures carry type hints and the optional flag is declared Optional[bool];
array shapes are documented in the hints' comments.
"""

from typing import Optional, Tuple, Union

import numpy as np

Array = np.ndarray


def softmax(x: Array) -> Array:
    shifted = x - np.max(x, axis=-1, keepdims=True)
    e = np.exp(shifted)
    return e / np.sum(e, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q: Array, K: Array, V: Array) -> Tuple[Array, Array]:
    d_k: int = Q.shape[-1]
    scores = np.matmul(Q, np.swapaxes(K, -1, -2)) / np.sqrt(d_k)  # (B, H, T, S)
    weights = softmax(scores)
    return np.matmul(weights, V), weights


class MultiHeadAttention:
    def __init__(self, d_model: int = 8, num_heads: int = 2) -> None:
        if d_model % num_heads != 0:
            raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")
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
        b, t, _ = x.shape
        return x.reshape(b, t, self.num_heads, self.d_k).transpose(0, 2, 1, 3)  # (B, H, T, d_k)

    def combine_heads(self, x: Array) -> Array:
        b, h, t, d_k = x.shape
        return x.transpose(0, 2, 1, 3).reshape(b, t, h * d_k)  # (B, T, D)

    def forward(
        self, Q: Array, K: Array, V: Array, return_weights: Optional[bool] = False
    ) -> Union[Array, Tuple[Array, Array]]:
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(heads) @ self.W_O
        if return_weights is not None:
            return out, weights
        return out
