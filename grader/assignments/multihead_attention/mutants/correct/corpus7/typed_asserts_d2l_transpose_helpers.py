# expect: correct
# d2l-style transpose_qkv / transpose_output helpers, an Array type alias, math.sqrt, and an assert or docstring at every step.
"""Multi-head attention following the structure of d2l.ai (chapter 11.5).

d2l folds batch and heads into one axis; this version keeps them apart so the
shapes match the exercise: (B, H, T, d_k).
"""
from __future__ import annotations

import math
from typing import Tuple, Union

import numpy as np

Array = np.ndarray
MaybeWeights = Union[Array, Tuple[Array, Array]]


def softmax(x: Array) -> Array:
    """Softmax over the last axis.

    >>> softmax(np.array([0.0, 0.0])).tolist()
    [0.5, 0.5]
    """
    x = np.asarray(x, dtype=float)
    assert x.ndim >= 1, "softmax needs at least one axis"
    z = x - x.max(axis=-1, keepdims=True)
    num = np.exp(z)
    den = num.sum(axis=-1, keepdims=True)
    assert np.all(den >= 1.0), "each row contains exp(0) after the shift"
    return num / den


def scaled_dot_product_attention(Q: Array, K: Array, V: Array) -> Tuple[Array, Array]:
    """Dot-product attention, d2l's DotProductAttention without masking or dropout.

    Args:
        Q: (B, H, T, d_k)
        K: (B, H, S, d_k)
        V: (B, H, S, d_k)
    Returns:
        (out (B, H, T, d_k), weights (B, H, T, S))
    """
    assert Q.shape[-1] == K.shape[-1], "queries and keys must share d_k"
    assert K.shape[-2] == V.shape[-2], "one value per key"
    d = Q.shape[-1]
    scores = np.matmul(Q, np.swapaxes(K, -1, -2)) / math.sqrt(d)
    attention_weights = softmax(scores)
    assert attention_weights.shape == Q.shape[:-1] + (K.shape[-2],)
    return np.matmul(attention_weights, V), attention_weights


def transpose_qkv(X: Array, num_heads: int) -> Array:
    """(B, T, D) -> (B, H, T, D/H)."""
    assert X.ndim == 3, X.shape
    assert X.shape[-1] % num_heads == 0
    X = X.reshape(X.shape[0], X.shape[1], num_heads, -1)
    return X.transpose(0, 2, 1, 3)


def transpose_output(X: Array) -> Array:
    """Reverse of transpose_qkv: (B, H, T, d) -> (B, T, H*d)."""
    assert X.ndim == 4, X.shape
    X = X.transpose(0, 2, 1, 3)
    return X.reshape(X.shape[0], X.shape[1], -1)


class MultiHeadAttention:
    """Multi-head attention with W_Q, W_K, W_V, W_O of shape (D, D)."""

    def __init__(self, d_model: int = 8, num_heads: int = 2) -> None:
        if num_heads <= 0 or d_model % num_heads != 0:
            raise ValueError("d_model (%d) must split evenly over num_heads (%d)"
                             % (d_model, num_heads))
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        scale = 1.0 / math.sqrt(d_model)
        self.W_Q: Array = rng.normal(0.0, scale, (d_model, d_model))
        self.W_K: Array = rng.normal(0.0, scale, (d_model, d_model))
        self.W_V: Array = rng.normal(0.0, scale, (d_model, d_model))
        self.W_O: Array = rng.normal(0.0, scale, (d_model, d_model))

    def split_heads(self, x: Array) -> Array:
        """(B, T, D) -> (B, H, T, d_k), head i holding features i*d_k:(i+1)*d_k."""
        out = transpose_qkv(x, self.num_heads)
        assert out.shape == (x.shape[0], self.num_heads, x.shape[1], self.d_k)
        return out

    def combine_heads(self, x: Array) -> Array:
        """(B, H, T, d_k) -> (B, T, D)."""
        assert x.shape[1] == self.num_heads
        return transpose_output(x)

    def forward(self, Q: Array, K: Array, V: Array, return_weights: bool = False) -> MaybeWeights:
        """queries (B, T, D), keys/values (B, S, D) -> (B, T, D) [and (B, H, T, S)]."""
        assert K.shape[:2] == V.shape[:2], "keys and values must line up"
        queries = self.split_heads(Q @ self.W_Q)
        keys = self.split_heads(K @ self.W_K)
        values = self.split_heads(V @ self.W_V)
        output, attention_weights = scaled_dot_product_attention(queries, keys, values)
        output_concat = self.combine_heads(output)
        result = output_concat @ self.W_O
        assert result.shape == Q.shape[:2] + (self.d_model,)
        if return_weights:
            return result, attention_weights
        return result
