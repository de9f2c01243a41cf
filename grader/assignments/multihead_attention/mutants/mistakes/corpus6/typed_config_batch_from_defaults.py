# expect: split-heads-hardcoded-shape
# split_heads reshapes with the batch size and sequence length stored in the module's AttentionConfig defaults instead of reading them from x.shape.
from __future__ import annotations

from typing import NamedTuple, Tuple

import numpy as np


class AttentionConfig(NamedTuple):
    d_model: int = 8
    num_heads: int = 2
    batch_size: int = 2
    seq_len: int = 5


DEFAULTS = AttentionConfig()


def softmax(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    shifted: np.ndarray = x - np.amax(x, axis=-1, keepdims=True)
    num: np.ndarray = np.exp(shifted)
    den: np.ndarray = np.sum(num, axis=-1, keepdims=True)
    return num / den


def scaled_dot_product_attention(
    Q: np.ndarray, K: np.ndarray, V: np.ndarray
) -> Tuple[np.ndarray, np.ndarray]:
    d_k: int = Q.shape[-1]
    scores: np.ndarray = np.matmul(Q, np.swapaxes(K, -1, -2)) / np.sqrt(d_k)
    weights: np.ndarray = softmax(scores)
    return np.matmul(weights, V), weights


class MultiHeadAttention:
    d_model: int
    num_heads: int
    d_k: int

    def __init__(self, d_model: int = DEFAULTS.d_model, num_heads: int = DEFAULTS.num_heads) -> None:
        if d_model % num_heads != 0:
            raise ValueError(f"d_model ({d_model}) % num_heads ({num_heads}) != 0")
        self.config = DEFAULTS._replace(d_model=d_model, num_heads=num_heads)
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, scale, (d_model, d_model))
        self.W_K = rng.normal(0.0, scale, (d_model, d_model))
        self.W_V = rng.normal(0.0, scale, (d_model, d_model))
        self.W_O = rng.normal(0.0, scale, (d_model, d_model))

    def split_heads(self, x: np.ndarray) -> np.ndarray:
        cfg = self.config
        x4 = x.reshape(cfg.batch_size, cfg.seq_len, cfg.num_heads, self.d_k)
        return x4.transpose(0, 2, 1, 3)

    def combine_heads(self, x: np.ndarray) -> np.ndarray:
        B, H, T, d_k = x.shape
        return x.transpose(0, 2, 1, 3).reshape(B, T, H * d_k)

    def forward(self, Q: np.ndarray, K: np.ndarray, V: np.ndarray, return_weights: bool = False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(heads) @ self.W_O
        if return_weights:
            return out, weights
        return out
