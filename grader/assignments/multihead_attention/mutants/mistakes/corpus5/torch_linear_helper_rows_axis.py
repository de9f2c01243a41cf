# expect: softmax-wrong-axis, mha-wrong-projection
# Two mistakes: softmax normalises over axis=1 instead of the last axis, and the Linear helper computes x @ W.T (torch's convention), so every projection uses the transposed matrix.
"""Multi-head attention built from a tiny Linear layer, the way I'd write it in PyTorch."""

import numpy as np


def softmax(x):
    """Softmax over each row, stabilised by the row max."""
    x = np.asarray(x, dtype=float)
    x_max = x.max(axis=1, keepdims=True)
    e_x = np.exp(x - x_max)
    return e_x / e_x.sum(axis=1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    d_k = Q.shape[-1]
    scores = np.matmul(Q, np.swapaxes(K, -1, -2)) / np.sqrt(d_k)
    weights = softmax(scores)
    return np.matmul(weights, V), weights


class Linear:
    """Bias-free linear layer, y = x W^T as in nn.Linear."""

    def __init__(self, weight):
        self.weight = weight  # (out_features, in_features)

    def __call__(self, x):
        return x @ self.weight.T


def _weight_of(name):
    return property(lambda self: getattr(self, name).weight,
                    lambda self, w: setattr(getattr(self, name), "weight", w))


class MultiHeadAttention:
    W_Q = _weight_of("q_proj")
    W_K = _weight_of("k_proj")
    W_V = _weight_of("v_proj")
    W_O = _weight_of("out_proj")

    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        rng = np.random.default_rng(0)
        scale = 1.0 / np.sqrt(d_model)
        self.q_proj = Linear(rng.normal(0.0, scale, (d_model, d_model)))
        self.k_proj = Linear(rng.normal(0.0, scale, (d_model, d_model)))
        self.v_proj = Linear(rng.normal(0.0, scale, (d_model, d_model)))
        self.out_proj = Linear(rng.normal(0.0, scale, (d_model, d_model)))

    def split_heads(self, x):
        B, T, _ = x.shape
        return x.reshape(B, T, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        B, _, T, _ = x.shape
        return x.transpose(0, 2, 1, 3).reshape(B, T, self.d_model)

    def forward(self, Q, K, V, return_weights=False):
        q = self.split_heads(self.q_proj(Q))
        k = self.split_heads(self.k_proj(K))
        v = self.split_heads(self.v_proj(V))
        ctx, weights = scaled_dot_product_attention(q, k, v)
        out = self.out_proj(self.combine_heads(ctx))
        return (out, weights) if return_weights else out
