# expect: correct
"""Multi-head attention written the JAX way: parameters live in a plain dict, every step is a pure function of
(params, inputs), and softmax maps a one-row function over the last axis with np.apply_along_axis."""

import numpy as np


def _softmax_row(row):
    z = row - row.max()
    e = np.exp(z)
    return e / e.sum()


def softmax(x):
    return np.apply_along_axis(_softmax_row, -1, np.asarray(x))


def scaled_dot_product_attention(Q, K, V):
    scores = Q @ K.swapaxes(-1, -2) / np.sqrt(Q.shape[-1])  # (B, H, T, S)
    weights = softmax(scores)
    return weights @ V, weights


def init_params(d_model, num_heads, seed=0):
    if d_model % num_heads != 0:
        raise ValueError(f"num_heads={num_heads} does not divide d_model={d_model}")
    rng = np.random.default_rng(seed)
    std = 1.0 / np.sqrt(d_model)
    return {name: rng.normal(0.0, std, (d_model, d_model)) for name in ("wq", "wk", "wv", "wo")}


def split(x, num_heads):
    b, t, d = x.shape
    return x.reshape(b, t, num_heads, d // num_heads).transpose(0, 2, 1, 3)  # (B, H, T, d_k)


def merge(x):
    b, h, t, d_k = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b, t, h * d_k)  # (B, T, D)


def apply(params, q_in, k_in, v_in, num_heads):
    q = split(q_in @ params["wq"], num_heads)
    k = split(k_in @ params["wk"], num_heads)
    v = split(v_in @ params["wv"], num_heads)
    heads, weights = scaled_dot_product_attention(q, k, v)
    return merge(heads) @ params["wo"], weights


class MultiHeadAttention:
    """A thin stateful shell around the pure functions above."""

    def __init__(self, d_model=8, num_heads=2):
        params = init_params(d_model, num_heads)
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.W_Q, self.W_K, self.W_V, self.W_O = params["wq"], params["wk"], params["wv"], params["wo"]

    @property
    def params(self):
        return {"wq": self.W_Q, "wk": self.W_K, "wv": self.W_V, "wo": self.W_O}

    def split_heads(self, x):
        return split(x, self.num_heads)

    def combine_heads(self, x):
        return merge(x)

    def forward(self, Q, K, V, return_weights=False):
        out, weights = apply(self.params, Q, K, V, self.num_heads)
        return (out, weights) if return_weights else out
