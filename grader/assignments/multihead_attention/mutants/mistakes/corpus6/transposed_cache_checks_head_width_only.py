# expect: mha-no-divisibility-check
# The constructor only raises when d_model // num_heads is 0 (more heads than features), so sizes like d_model=10, num_heads=4 are accepted with a truncated d_k.
"""MHA that keeps transposed weight copies around.

The scores need K^T and I also do the projections as W^T x^T so I cache the
transposes; the cache is rebuilt whenever one of the W attributes is a
different array than the one the cache was built from.
"""

import numpy as np


def softmax(x):
    x = np.asarray(x)
    shifted = x - x.max(axis=-1, keepdims=True)
    ex = np.exp(shifted)
    return ex / ex.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    KT = K.transpose(0, 1, 3, 2)
    scores = (Q @ KT) / np.sqrt(d_k)
    weights = softmax(scores)
    return weights @ V, weights


class MultiHeadAttention:
    _names = ("W_Q", "W_K", "W_V", "W_O")

    def __init__(self, d_model=8, num_heads=2):
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        if self.d_k < 1:
            raise ValueError("num_heads can't be larger than d_model")
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(d_model)
        self.W_Q = rng.normal(0.0, scale, (d_model, d_model))
        self.W_K = rng.normal(0.0, scale, (d_model, d_model))
        self.W_V = rng.normal(0.0, scale, (d_model, d_model))
        self.W_O = rng.normal(0.0, scale, (d_model, d_model))
        self._src = None
        self._T = {}

    def _transposed(self):
        current = tuple(getattr(self, n) for n in self._names)
        if self._src is None or any(a is not b for a, b in zip(current, self._src)):
            self._T = {n: np.ascontiguousarray(w.T) for n, w in zip(self._names, current)}
            self._src = current
        return self._T

    @staticmethod
    def _project(WT, x):
        # (W^T x^T)^T == x W
        return np.swapaxes(WT @ np.swapaxes(x, -1, -2), -1, -2)

    def split_heads(self, x):
        B, T, _ = x.shape
        return x.reshape(B, T, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        B, H, T, d_k = x.shape
        return x.transpose(0, 2, 1, 3).reshape(B, T, H * d_k)

    def forward(self, Q, K, V, return_weights=False):
        WT = self._transposed()
        q = self.split_heads(self._project(WT["W_Q"], Q))
        k = self.split_heads(self._project(WT["W_K"], K))
        v = self.split_heads(self._project(WT["W_V"], V))
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = self._project(WT["W_O"], self.combine_heads(heads))
        if return_weights:
            return out, weights
        return out
