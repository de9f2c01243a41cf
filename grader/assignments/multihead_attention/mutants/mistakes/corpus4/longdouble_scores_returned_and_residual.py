# expect: attention-returns-scores, mha-adds-residual
# Two mistakes: attention hands back the scaled scores instead of the softmax weights, and forward adds the query input to its output.
"""Multi-head attention that does its softmax and attention arithmetic in np.longdouble (extended precision
where the platform has it) and casts the results back to the caller's floating type."""

import numpy as np


def _float_type(*arrays):
    # The caller's floating type; integers come back as float64.
    kind = np.result_type(*arrays)
    return kind if np.issubdtype(kind, np.floating) else np.dtype(np.float64)


def softmax(x):
    x = np.asarray(x)
    wide = x.astype(np.longdouble)
    wide = wide - wide.max(axis=-1, keepdims=True)
    e = np.exp(wide)
    return (e / e.sum(axis=-1, keepdims=True)).astype(_float_type(x))


def scaled_dot_product_attention(Q, K, V):
    kind = _float_type(Q, K, V)
    q, k, v = (a.astype(np.longdouble) for a in (Q, K, V))
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(np.longdouble(q.shape[-1]))  # (B, H, T, S)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    w = e / e.sum(axis=-1, keepdims=True)
    return (w @ v).astype(kind), scores.astype(kind)


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError(f"num_heads ({num_heads}) has to divide d_model ({d_model})")
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
        n, length = x.shape[0], x.shape[1]
        return x.reshape(n, length, self.num_heads, self.d_k).transpose(0, 2, 1, 3)  # (B, H, T, d_k)

    def combine_heads(self, x):
        n, heads, length, width = x.shape
        return x.transpose(0, 2, 1, 3).reshape(n, length, heads * width)  # (B, T, D)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = Q + self.combine_heads(heads) @ self.W_O  # the residual path around the attention
        if return_weights:
            return out, weights
        return out
