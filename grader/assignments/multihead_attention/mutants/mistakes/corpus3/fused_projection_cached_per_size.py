# expect: mha-wrong-projection
# known-miss: weights kept from an earlier layer of the same size; no rule compares a call with the weights of the layers before it
# The stacked projection matrices are cached in a module global per (d_model, num_heads): a second layer of the same size, or new weights, reuse the first layer's matrices.
"""Multi-head attention with softmax from pairwise differences, 1 / sum_j exp(x_j - x_i), and scores built keys first."""

import numpy as np

_FUSED = {}


def softmax(x):
    x = np.asarray(x, dtype=float)
    diff = x[..., None, :] - x[..., :, None]  # (..., N, N): diff[..., i, j] = x_j - x_i
    # An entry at -inf gets probability 0; its row of differences would be nan.
    diff = np.where(np.isneginf(x)[..., :, None], np.inf, diff)
    with np.errstate(over="ignore"):
        return 1.0 / np.sum(np.exp(diff), axis=-1)  # (..., N)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    scores_t = K @ np.swapaxes(Q, -1, -2)  # (B, H, S, T)
    scores = np.swapaxes(scores_t, -1, -2) / np.sqrt(d_k)  # (B, H, T, S)
    weights = softmax(scores)
    return weights @ V, weights


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError(f"d_model % num_heads must be 0, got {d_model} % {num_heads}")
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
        n, length, _ = x.shape
        return x.reshape(n, length, self.num_heads, self.d_k).transpose(0, 2, 1, 3)  # (B, H, T, d_k)

    def combine_heads(self, x):
        n, heads, length, width = x.shape
        return x.transpose(0, 2, 1, 3).reshape(n, length, heads * width)  # (B, T, D)

    def forward(self, Q, K, V, return_weights=False):
        key = (self.d_model, self.num_heads)
        if key not in _FUSED:
            _FUSED[key] = np.stack([self.W_Q, self.W_K, self.W_V])  # (3, D, D)
        fused = _FUSED[key]
        q, k, v = (self.split_heads(x @ w) for x, w in zip((Q, K, V), fused))
        heads, weights = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(heads) @ self.W_O
        return (out, weights) if return_weights else out
