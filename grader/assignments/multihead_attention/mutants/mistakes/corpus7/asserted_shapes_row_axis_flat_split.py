# expect: softmax-wrong-axis, split-heads-no-transpose
# softmax takes its max and sum over axis=1 (rows of a 2-D matrix) instead of the last axis; split_heads reshapes (B, T, D) straight to (B, H, T, d_k) with no transpose, and the shape assert still passes.
"""Multi-head attention with shape checks everywhere."""
import numpy as np


def softmax(x):
    """Softmax of each row.

    Args:
        x: scores, one row per query.
    Returns:
        probabilities of the same shape, each row summing to one.
    """
    x = np.asarray(x, dtype=float)
    assert x.ndim >= 1
    shifted = x - np.max(x, axis=1, keepdims=True)
    e = np.exp(shifted)
    out = e / np.sum(e, axis=1, keepdims=True)
    assert out.shape == x.shape
    return out


def scaled_dot_product_attention(Q, K, V):
    """Q: (B, H, T, d_k), K/V: (B, H, S, d_k) -> (B, H, T, d_k), (B, H, T, S)."""
    assert Q.ndim == K.ndim == V.ndim == 4
    assert Q.shape[-1] == K.shape[-1]
    assert K.shape[2] == V.shape[2]
    d_k = Q.shape[-1]
    scores = Q @ K.transpose(0, 1, 3, 2) / np.sqrt(d_k)
    assert scores.shape == (Q.shape[0], Q.shape[1], Q.shape[2], K.shape[2])
    weights = softmax(scores)
    out = weights @ V
    assert out.shape == Q.shape[:3] + (V.shape[-1],)
    return out, weights


class MultiHeadAttention:
    """Multi-head attention layer (W applied on the right)."""

    def __init__(self, d_model=8, num_heads=2):
        """Create the four (d_model, d_model) projections."""
        if d_model % num_heads != 0:
            raise ValueError(f"{d_model} % {num_heads} != 0")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, scale, (d_model, d_model))
        self.W_K = rng.normal(0.0, scale, (d_model, d_model))
        self.W_V = rng.normal(0.0, scale, (d_model, d_model))
        self.W_O = rng.normal(0.0, scale, (d_model, d_model))
        assert self.W_Q.shape == (d_model, d_model)

    def split_heads(self, x):
        """(B, T, D) -> (B, H, T, d_k)."""
        assert x.ndim == 3 and x.shape[-1] == self.d_model
        B, T, _ = x.shape
        out = x.reshape(B, self.num_heads, T, self.d_k)
        assert out.shape == (B, self.num_heads, T, self.d_k)
        return out

    def combine_heads(self, x):
        """(B, H, T, d_k) -> (B, T, D)."""
        assert x.ndim == 4 and x.shape[1] == self.num_heads
        B, H, T, d_k = x.shape
        out = x.transpose(0, 2, 1, 3).reshape(B, T, H * d_k)
        assert out.shape == (B, T, self.d_model)
        return out

    def forward(self, Q, K, V, return_weights=False):
        """(B, T, D), (B, S, D), (B, S, D) -> (B, T, D) [, (B, H, T, S)]."""
        assert Q.shape[-1] == K.shape[-1] == V.shape[-1] == self.d_model
        assert K.shape[1] == V.shape[1]
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(heads) @ self.W_O
        assert out.shape == Q.shape
        if return_weights:
            return out, weights
        return out
