# expect: softmax-global-max
# Mistake in softmax: it subtracts np.max(x) of the whole array instead of each row's max, so rows far below the global max underflow to 0/0.
"""Multi-head attention. I use np.matmul's axes= argument so that no array has
to be transposed by hand: each entry of axes names the two matrix axes of one
operand (and of the result)."""

import numpy as np

# (rows, cols) of each operand and of the result; the default is the last two of each
_PLAIN = [(-2, -1), (-2, -1), (-2, -1)]
_RHS_T = [(-2, -1), (-1, -2), (-2, -1)]   # read the right operand as its transpose


def softmax(x):
    """Numerically stable softmax over the last axis."""
    x = np.asarray(x, dtype=float)
    # subtract the max first so exp never overflows
    z = x - np.max(x)
    ez = np.exp(z)
    return ez / np.sum(ez, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    """Q (B, H, T, d_k), K/V (B, H, S, d_k) -> (out (B, H, T, d_k), weights (B, H, T, S))."""
    d_k = Q.shape[-1]
    scores = np.matmul(Q, K, axes=_RHS_T) / np.sqrt(d_k)   # Q @ K^T, (B, H, T, S)
    weights = softmax(scores)
    out = np.matmul(weights, V, axes=_PLAIN)               # (B, H, T, d_k)
    return out, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("num_heads has to divide d_model")
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
        return np.transpose(x.reshape(B, T, self.num_heads, self.d_k), axes=(0, 2, 1, 3))

    def combine_heads(self, x):
        B, H, T, d_k = x.shape
        return np.transpose(x, axes=(0, 2, 1, 3)).reshape(B, T, H * d_k)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(np.matmul(Q, self.W_Q, axes=_PLAIN))
        k = self.split_heads(np.matmul(K, self.W_K, axes=_PLAIN))
        v = self.split_heads(np.matmul(V, self.W_V, axes=_PLAIN))
        ctx, weights = scaled_dot_product_attention(q, k, v)
        out = np.matmul(self.combine_heads(ctx), self.W_O, axes=_PLAIN)
        if return_weights:
            return out, weights
        return out
