# expect: attention-scale-after-softmax, mha-adds-residual
# attention divides the softmax probabilities by sqrt(d_k) (np.divide after softmax) instead of the scores; forward adds the query input back onto the output with np.add
"""Parameters-in-a-dict multi-head attention with a thin class around it.

``init_params`` returns a plain dict; the class keeps it and exposes the
matrices as attributes that point into the dict.
"""

import math

import numpy as np


def init_params(d_model, seed=0):
    rng = np.random.default_rng(seed)
    std = 1.0 / np.sqrt(d_model)
    params = {}
    for key in ("W_Q", "W_K", "W_V", "W_O"):
        params[key] = rng.normal(0.0, std, (d_model, d_model))
    return params


def softmax(x):
    x = np.asarray(x)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V):
    raw = np.matmul(Q, np.swapaxes(K, -1, -2))
    probs = np.divide(softmax(raw), math.sqrt(Q.shape[-1]))
    return np.matmul(probs, V), probs


class MultiHeadAttention:
    def __init__(self, d_model=8, num_heads=2):
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        params = init_params(d_model)
        for key, value in params.items():
            setattr(self, key, value)

    @property
    def params(self):
        return {k: getattr(self, k) for k in ("W_Q", "W_K", "W_V", "W_O")}

    def split_heads(self, x):
        B, T, _ = x.shape
        return x.reshape(B, T, self.num_heads, self.d_k).transpose(0, 2, 1, 3)

    def combine_heads(self, x):
        B, H, T, dk = x.shape
        return x.transpose(0, 2, 1, 3).reshape(B, T, H * dk)

    def forward(self, Q, K, V, return_weights=False):
        p = self.params
        q = self.split_heads(Q @ p["W_Q"])
        k = self.split_heads(K @ p["W_K"])
        v = self.split_heads(V @ p["W_V"])
        ctx, probs = scaled_dot_product_attention(q, k, v)
        out = self.combine_heads(ctx) @ p["W_O"]
        out = np.add(out, Q, out=out)    # skip connection
        if return_weights:
            return out, probs
        return out
