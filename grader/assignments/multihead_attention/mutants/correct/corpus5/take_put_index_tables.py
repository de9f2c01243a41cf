# expect: correct
# correct; heads are cut with np.take on an index table and merged with np.put on flat positions; attention returns a typing.NamedTuple; row max via np.sort, row sum via np.add.accumulate
"""Index-table multi-head attention.

Instead of reshape/transpose, the layer builds an index table once: row ``h``
lists the feature columns that belong to head ``h``.  ``np.take`` gathers them,
and ``np.put`` scatters the heads back to their flat positions.
"""

import math
from typing import NamedTuple

import numpy as np


class Attended(NamedTuple):
    out: np.ndarray       # (..., T, d_k)
    weights: np.ndarray   # (..., T, S)


def softmax(x):
    x = np.asarray(x)
    top = np.sort(x, axis=-1)[..., -1:]          # largest entry of every row
    e = np.exp(x - top)
    total = np.add.accumulate(e, axis=-1)[..., -1:]
    return e / total


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    logits = np.matmul(Q, np.swapaxes(K, -1, -2)) / math.sqrt(d_k)
    w = softmax(logits)
    return Attended(np.matmul(w, V), w)


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError(f"cannot split {d_model} features into {num_heads} equal heads")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        s = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, s, (d_model, d_model))
        self.W_K = rng.normal(0.0, s, (d_model, d_model))
        self.W_V = rng.normal(0.0, s, (d_model, d_model))
        self.W_O = rng.normal(0.0, s, (d_model, d_model))
        # head h owns columns h*d_k ... (h+1)*d_k - 1
        self._columns = np.arange(d_model).reshape(num_heads, self.d_k)

    def split_heads(self, x):
        gathered = np.take(x, self._columns, axis=-1)   # (B, T, H, d_k)
        return gathered.transpose(0, 2, 1, 3)           # (B, H, T, d_k)

    def combine_heads(self, x):
        B, H, T, dk = x.shape
        D = H * dk
        merged = np.empty((B, T, D), dtype=x.dtype)
        # flat position in merged of element (b, h, t, j) is b*T*D + t*D + h*dk + j
        where = np.arange(math.prod((B, T, D))).reshape(B, T, H, dk).transpose(0, 2, 1, 3)
        np.put(merged, where, x)   # both are read in C order, so they line up
        return merged

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        context, weights = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(context) @ self.W_O
        return (out, weights) if return_weights else out
