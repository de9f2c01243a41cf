# expect: attention-wrong-transpose
# the helper meant to swap K's last two axes builds an axes list and swaps its first and last entries instead, so K is transposed over (0, -1)
"""Rank-agnostic attention with a hand-rolled "transpose the last two" helper.

``_flip_last`` builds an explicit axes permutation so it works for any rank;
heads are cut with a reshape and merged back with ``np.block``.
"""

import numpy as np


def _flip_last(a):
    # permutation that is the identity except for the two axes we swap
    axes = list(range(a.ndim))
    axes[0], axes[-1] = axes[-1], axes[0]
    return np.transpose(a, axes)


def softmax(x):
    x = np.asarray(x)
    mx = x.max(axis=-1, keepdims=True)
    e = np.exp(x - mx)
    return e / e.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    scores = Q @ _flip_last(K) / np.sqrt(d_k)
    w = softmax(scores)
    return w @ V, w


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("heads do not tile d_model")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        std = d_model ** -0.5
        self.W_Q = rng.normal(0.0, std, (d_model, d_model))
        self.W_K = rng.normal(0.0, std, (d_model, d_model))
        self.W_V = rng.normal(0.0, std, (d_model, d_model))
        self.W_O = rng.normal(0.0, std, (d_model, d_model))

    def split_heads(self, x):
        B, T, _ = x.shape
        return x.reshape(B, T, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        # np.block on a flat list concatenates along the last axis
        return np.block([x[:, h] for h in range(x.shape[1])])

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(Q @ self.W_Q)
        k = self.split_heads(K @ self.W_K)
        v = self.split_heads(V @ self.W_V)
        out, w = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(out) @ self.W_O
        if return_weights:
            return out, w
        return out
