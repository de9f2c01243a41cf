# expect: softmax-no-keepdims, attention-no-scale
# Two mistakes: the row peaks are squeezed to shape (...,) before the shift, so they broadcast along the wrong axis, and the scores are never divided by sqrt(d_k).
"""Multi-head attention whose softmax finds each row's peak with np.argmax and np.take_along_axis, and whose
contractions are written in np.einsum's sublist form (operand, [axis labels]) instead of subscript strings."""

import numpy as np

_ = Ellipsis


def softmax(x):
    x = np.asarray(x)
    peak_at = np.argmax(x, axis=-1)  # (...,) index of each row's max
    peak = np.take_along_axis(x, peak_at[..., None], axis=-1)[..., 0]  # (...,) one value per row
    e = np.exp(x - peak)
    return e / e.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    T, S, D = 0, 1, 2  # labels: query position, key position, head feature
    scores = np.einsum(Q, [_, T, D], K, [_, S, D], [_, T, S])  # (B, H, T, S)
    weights = softmax(scores)
    out = np.einsum(weights, [_, T, S], V, [_, S, D], [_, T, D])  # (B, H, T, d_k)
    return out, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads:
            raise ValueError(f"{num_heads} heads cannot share a width of {d_model} evenly")
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
        b, t, _d = x.shape
        x4 = x.reshape(b, t, self.num_heads, self.d_k)
        return np.einsum(x4, [0, 1, 2, 3], [0, 2, 1, 3])  # (B, H, T, d_k)

    def combine_heads(self, x):
        b, h, t, d_k = x.shape
        return np.einsum(x, [0, 1, 2, 3], [0, 2, 1, 3]).reshape(b, t, h * d_k)  # (B, T, D)

    def _project(self, x, W):
        return np.einsum(x, [_, 0], W, [0, 1], [_, 1])  # x @ W over the feature axis

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(self._project(Q, self.W_Q))
        k = self.split_heads(self._project(K, self.W_K))
        v = self.split_heads(self._project(V, self.W_V))
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = self._project(self.combine_heads(heads), self.W_O)
        if return_weights:
            return out, weights
        return out
