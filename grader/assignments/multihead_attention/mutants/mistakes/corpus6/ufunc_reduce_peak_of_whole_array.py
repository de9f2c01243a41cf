# expect: softmax-global-max
# softmax shifts by np.maximum.reduce over the flattened array (one max for the whole input) instead of each row's own max, so rows far below the global peak underflow to 0/0.
"""Multi-head attention with NumPy ufunc reductions.

I like spelling reductions as ufunc.reduce, it makes it obvious which binary
operation is being folded.
"""

import numpy as np

_add = np.add.reduce
_peak = np.maximum.reduce


def softmax(x):
    """Softmax over the last axis, shifted so exp() can't overflow."""
    x = np.asarray(x)
    # subtract the biggest logit first: exp of anything <= 0 is at most 1
    shift = _peak(x.ravel())
    z = np.exp(x - shift)
    return z / _add(z, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    Kt = np.swapaxes(K, -1, -2)                       # (B, H, d_k, S)
    scores = np.matmul(Q, Kt) * (1.0 / np.sqrt(d_k))  # (B, H, T, S)
    weights = softmax(scores)
    return np.matmul(weights, V), weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if np.remainder(d_model, num_heads) != 0:
            raise ValueError("d_model must be divisible by num_heads")
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
        B, T = x.shape[:2]
        return np.moveaxis(x.reshape(B, T, self.num_heads, self.d_k), 2, 1)

    def combine_heads(self, x):
        B, H, T, d = x.shape
        return np.moveaxis(x, 1, 2).reshape(B, T, H * d)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(np.matmul(Q, self.W_Q))
        k = self.split_heads(np.matmul(K, self.W_K))
        v = self.split_heads(np.matmul(V, self.W_V))
        ctx, weights = scaled_dot_product_attention(q, k, v)
        out = np.matmul(self.combine_heads(ctx), self.W_O)
        if return_weights:
            return out, weights
        return out
